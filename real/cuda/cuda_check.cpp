// Error translation for the three GPU libraries.
#include "real/cuda/cuda_check.hpp"

namespace tpsim::real {
namespace {

std::string where(const char* call, const char* file, int line) {
  return std::string(call) + " at " + file + ":" + std::to_string(line);
}

}  // namespace

void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  throw GpuError(where(call, file, line) + " failed: " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) +
                 ")");
}

void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw GpuError(where(call, file, line) + " failed: cuBLAS status " + std::to_string(static_cast<int>(status)));
}

void check_nccl(ncclResult_t status, const char* call, const char* file, int line) {
  if (status == ncclSuccess || status == ncclInProgress) return;
  throw GpuError(where(call, file, line) + " failed: " + ncclGetErrorString(status) +
                 " (NCCL_DEBUG=WARN in the environment tells more)");
}

std::string cuda_device_problem() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) return std::string("no CUDA device: ") + cudaGetErrorString(status);
  if (count == 0) return "no CUDA device: the driver sees none";
  return "";
}

}  // namespace tpsim::real
