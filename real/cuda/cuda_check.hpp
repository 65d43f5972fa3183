// Every CUDA, cuBLAS and NCCL call goes through these: a failure becomes a GpuError naming the call,
// the file and the line, and the library's own description of the error.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

namespace tpsim::real {

class GpuError : public std::runtime_error {
 public:
  explicit GpuError(const std::string& message) : std::runtime_error(message) {}
};

void check_cuda(cudaError_t status, const char* call, const char* file, int line);
void check_cublas(cublasStatus_t status, const char* call, const char* file, int line);
void check_nccl(ncclResult_t status, const char* call, const char* file, int line);

// Empty when a CUDA device can be used; else why not ("no CUDA device: CUDA driver version is
// insufficient for CUDA runtime version"), for the message of a skipped GPU test or run.
std::string cuda_device_problem();

}  // namespace tpsim::real

#define TPSIM_CUDA(call) ::tpsim::real::check_cuda((call), #call, __FILE__, __LINE__)
#define TPSIM_CUBLAS(call) ::tpsim::real::check_cublas((call), #call, __FILE__, __LINE__)
#define TPSIM_NCCL(call) ::tpsim::real::check_nccl((call), #call, __FILE__, __LINE__)
// After a kernel launch: a bad configuration shows here, not at the launch.
#define TPSIM_CUDA_LAUNCHED() ::tpsim::real::check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
