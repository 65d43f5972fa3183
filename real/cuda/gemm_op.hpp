// One cuBLASLt matmul, set up once and launched many times: Y[M, N] = X[M, K] W[N, K]^T, row-major,
// the nn.Linear layout (cuBLASLt's column-major "TN" form, the one its fp8 kernels require).
// bf16: bf16 operands and output, float accumulation. fp8: e4m3 operands, unit scales, bf16 output.
#pragma once

#include <cublasLt.h>

#include <string>

#include "real/core/gemm_shapes.hpp"
#include "real/cuda/cuda_check.hpp"
#include "real/cuda/kernels.hpp"

namespace tpsim::real {

class GemmOp {
 public:
  // `x_stride` is the distance in elements between rows of X (K when X is a whole matrix; more when
  // X is the first K columns of a wider one). Throws NoGemmAlgorithm when cuBLASLt has none for it.
  GemmOp(cublasLtHandle_t handle, const GemmCase& shape, ElementType operands, void* workspace, size_t workspace_bytes,
         int64_t x_stride = 0);
  ~GemmOp();
  GemmOp(const GemmOp&) = delete;
  GemmOp& operator=(const GemmOp&) = delete;

  void run(const void* x, const void* w, void* y, cudaStream_t stream) const;

  const GemmCase& shape() const { return shape_; }
  ElementType operands() const { return operands_; }

  // Bytes of X, W and Y (for buffer sizing and rotation).
  size_t x_bytes() const;
  size_t w_bytes() const;
  size_t y_bytes() const;

 private:
  cublasLtHandle_t handle_;
  GemmCase shape_;
  ElementType operands_;
  void* workspace_;
  size_t workspace_bytes_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t w_layout_ = nullptr, x_layout_ = nullptr, y_layout_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

// cuBLASLt offers no algorithm for a shape and type (fp8 needs dimensions that are multiples of 16).
class NoGemmAlgorithm : public GpuError {
 public:
  using GpuError::GpuError;
};

// cuBLASLt's recommended workspace for Hopper.
inline constexpr size_t kGemmWorkspaceBytes = size_t{32} << 20;

}  // namespace tpsim::real
