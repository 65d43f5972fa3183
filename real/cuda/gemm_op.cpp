// cuBLASLt descriptors and the heuristic's first algorithm.
#include "real/cuda/gemm_op.hpp"

#include "real/cuda/cuda_check.hpp"

namespace tpsim::real {

GemmOp::GemmOp(cublasLtHandle_t handle, const GemmCase& shape, ElementType operands, void* workspace,
               size_t workspace_bytes, int64_t x_stride)
    : handle_(handle), shape_(shape), operands_(operands), workspace_(workspace), workspace_bytes_(workspace_bytes) {
  const cudaDataType_t in_type = operands == ElementType::kFp8E4m3 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  TPSIM_CUBLAS(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
  TPSIM_CUBLAS(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose));
  TPSIM_CUBLAS(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof keep));
  // Column-major view: W is K x N (ld K) used transposed, X is K x M (ld x_stride), Y is N x M (ld N).
  const auto m = static_cast<uint64_t>(shape.m), n = static_cast<uint64_t>(shape.n), k = static_cast<uint64_t>(shape.k);
  const int64_t ldx = x_stride > 0 ? x_stride : shape.k;
  TPSIM_CUBLAS(cublasLtMatrixLayoutCreate(&w_layout_, in_type, k, n, static_cast<int64_t>(k)));
  TPSIM_CUBLAS(cublasLtMatrixLayoutCreate(&x_layout_, in_type, k, m, ldx));
  TPSIM_CUBLAS(cublasLtMatrixLayoutCreate(&y_layout_, CUDA_R_16BF, n, m, static_cast<int64_t>(n)));

  cublasLtMatmulPreference_t preference = nullptr;
  TPSIM_CUBLAS(cublasLtMatmulPreferenceCreate(&preference));
  TPSIM_CUBLAS(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &workspace_bytes, sizeof workspace_bytes));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle, desc_, w_layout_, x_layout_, y_layout_,
                                                               y_layout_, preference, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(preference);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0) {
    throw NoGemmAlgorithm("cuBLASLt has no algorithm for " + std::to_string(shape.m) + "x" + std::to_string(shape.n) +
                          "x" + std::to_string(shape.k) + (operands == ElementType::kFp8E4m3 ? " fp8" : " bf16") +
                          " (fp8 needs M, N, K multiples of 16)");
  }
  algo_ = result.algo;
}

GemmOp::~GemmOp() {
  cublasLtMatrixLayoutDestroy(y_layout_);
  cublasLtMatrixLayoutDestroy(x_layout_);
  cublasLtMatrixLayoutDestroy(w_layout_);
  cublasLtMatmulDescDestroy(desc_);
}

void GemmOp::run(const void* x, const void* w, void* y, cudaStream_t stream) const {
  const float alpha = 1.0f, beta = 0.0f;
  TPSIM_CUBLAS(cublasLtMatmul(handle_, desc_, &alpha, w, w_layout_, x, x_layout_, &beta, y, y_layout_, y, y_layout_,
                              &algo_, workspace_, workspace_bytes_, stream));
}

size_t GemmOp::x_bytes() const {
  return static_cast<size_t>(shape_.m * shape_.k) * element_bytes(operands_);
}
size_t GemmOp::w_bytes() const {
  return static_cast<size_t>(shape_.n * shape_.k) * element_bytes(operands_);
}
size_t GemmOp::y_bytes() const {
  return static_cast<size_t>(shape_.m * shape_.n) * 2;
}

}  // namespace tpsim::real
