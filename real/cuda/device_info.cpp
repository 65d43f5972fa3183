// Device properties and library versions.
#include "real/cuda/device_info.hpp"

#include "real/cuda/cuda_check.hpp"

namespace tpsim::real {

DeviceFacts device_facts(int device) {
  cudaDeviceProp prop{};
  TPSIM_CUDA(cudaGetDeviceProperties(&prop, device));
  DeviceFacts f;
  f.name = prop.name;
  f.sm_count = prop.multiProcessorCount;
  f.l2_bytes = prop.l2CacheSize;
  f.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  f.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
  int khz = 0;
  TPSIM_CUDA(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device));
  f.sm_clock_mhz = khz / 1000;
  TPSIM_CUDA(cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device));
  f.memory_clock_mhz = khz / 1000;
  int version = 0;
  TPSIM_CUDA(cudaDriverGetVersion(&version));
  f.driver_version = cuda_version_text(version);
  TPSIM_CUDA(cudaRuntimeGetVersion(&version));
  f.runtime_version = cuda_version_text(version);
  f.cublas_version = cublas_version_text(static_cast<int64_t>(cublasLtGetVersion()));
  TPSIM_NCCL(ncclGetVersion(&version));
  f.nccl_version = nccl_version_text(version);
  return f;
}

bool enable_peer_access(int device, int peer) {
  int can = 0;
  TPSIM_CUDA(cudaDeviceCanAccessPeer(&can, device, peer));
  if (!can) return false;
  int current = 0;
  TPSIM_CUDA(cudaGetDevice(&current));
  TPSIM_CUDA(cudaSetDevice(device));
  const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();  // clears the sticky "already enabled"
  } else {
    TPSIM_CUDA(status);
  }
  TPSIM_CUDA(cudaSetDevice(current));
  return true;
}

GpuStateSampler sample_gpu_state(const std::vector<int>& devices) {
  std::vector<std::string> bus_ids;
  for (int device : devices) {
    char id[32] = {};  // "0000:3b:00.0"
    TPSIM_CUDA(cudaDeviceGetPCIBusId(id, sizeof id, device));
    bus_ids.emplace_back(id);
  }
  return GpuStateSampler(system_nvml(), bus_ids);
}

int visible_device_count() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

}  // namespace tpsim::real
