// Single-GPU set-up.
#include "real/cuda/gpu_session.hpp"

#include "real/cuda/cuda_check.hpp"
#include "real/cuda/device_info.hpp"
#include "real/cuda/gemm_buffers.hpp"
#include "real/cuda/gemm_op.hpp"

namespace tpsim::real {

GpuSession::GpuSession(const RealOptions& options, const std::vector<std::string>& arguments, int device)
    : device_(device), provenance_(host_provenance(arguments)) {
  const std::string problem = cuda_device_problem();
  if (!problem.empty()) throw GpuError(problem);
  const int count = visible_device_count();
  if (device < 0 || device >= count) {
    throw GpuError("--local-device " + std::to_string(device) + ": this process sees " + std::to_string(count) +
                   " GPU(s)");
  }
  TPSIM_CUDA(cudaSetDevice(device));
  provenance_.device = device_facts(device);
  gpu_ = options.gpu.empty() ? gpu_preset_for_device(provenance_.device.name) : options.gpu;
  TPSIM_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  TPSIM_CUDA(cudaStreamCreateWithFlags(&side_stream_, cudaStreamNonBlocking));
  TPSIM_CUBLAS(cublasLtCreate(&lt_));
  workspace_ = DeviceBuffer(device, kGemmWorkspaceBytes);
}

GpuSession::~GpuSession() {
  cudaSetDevice(device_);
  if (lt_ != nullptr) cublasLtDestroy(lt_);
  if (side_stream_ != nullptr) cudaStreamDestroy(side_stream_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

int GpuSession::rotation_sets(size_t bytes_per_set) const {
  return real::rotation_sets(facts().l2_bytes, bytes_per_set);
}

int chosen_device(const RealOptions& options) {
  return options.launch.local_device >= 0 ? options.launch.local_device : 0;
}

}  // namespace tpsim::real
