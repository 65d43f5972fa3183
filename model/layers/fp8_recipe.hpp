// FP8 training recipes: the quantisation kernels each recipe launches around a linear's three GEMMs
// (forward, data gradient, weight gradient), as torchao runs them under torch.compile (TorchTitan's
// float8 and mx converters), with HBM bytes per element of the tensor each one quantises.
#pragma once

#include <string>
#include <vector>

#include "base/enum_names.hpp"

namespace tpsim::model {

// tensorwise: one fp32 scale per tensor, e4m3 forward and e5m2 gradients (torchao Float8LinearConfig);
// rowwise: one scale per row, e4m3 throughout, the backward GEMMs rescaled after cuBLAS; blockwise:
// 1x128 activation and 128x128 weight blocks (DeepSeek-V3's recipe, torchao Float8BlockwiseLinear);
// mxfp8: 32-element blocks with e8m0 scales (torchao MXLinear; Blackwell's block-scaled tensor cores).
enum class Fp8Recipe { kNone, kTensorwise, kRowwise, kBlockwise, kMxfp8 };
// workload.fp8_recipe's values in the order its message lists them; none (dtype bf16) is printed only.
inline constexpr EnumName<Fp8Recipe> kFp8RecipeNames[] = {{Fp8Recipe::kTensorwise, "tensorwise"},
                                                          {Fp8Recipe::kRowwise, "rowwise"},
                                                          {Fp8Recipe::kBlockwise, "blockwise"},
                                                          {Fp8Recipe::kMxfp8, "mxfp8"},
                                                          {Fp8Recipe::kNone, "none", NameUse::kPrinted}};

// Which GEMM of a linear: the forward y = x W^T [T, K] x [K, N], the data gradient dx = dy W, or the
// weight gradient dW = dy^T x. In GEMM terms each reads A [M, K] and B [K, N]: forward A = x, B = W;
// data gradient A = dy, B = W; weight gradient A = x^T, B = dy.
enum class GemmRole { kForward, kDataGradient, kWeightGradient };

// The name suffixes of a linear's backward GEMMs (<gemm>.dgrad, <gemm>.wgrad), from which the builder
// tells a GEMM's role.
inline constexpr const char* kDataGradientSuffix = ".dgrad";
inline constexpr const char* kWeightGradientSuffix = ".wgrad";
GemmRole gemm_role_of(const std::string& linear_name);

// One memory-bound kernel quantising (or scanning) one operand of a GEMM; bytes per element of that
// operand (bf16 2, fp8 1, plus the scales: fp32 per 128-element tile 4/128, per 128x128 block 4/16384,
// e8m0 per 32 elements 1/32).
struct QuantKernel {
  std::string name;  // e.g. "x.amax", "dy.cast_t"
  bool reads_b = false;
  double read_per_element = 0;
  double written_per_element = 0;
};

// The kernels `recipe` runs before a GEMM of `role`, in issue order (the weight's first).
const std::vector<QuantKernel>& quant_kernels(Fp8Recipe recipe, GemmRole role);
// Whether the GEMM's bf16 output is rescaled by a kernel of its own after it (rowwise backward GEMMs:
// cuBLAS's tensorwise kernel with unit scales, then out *= scale; pytorch/ao#2184).
bool rescales_output(Fp8Recipe recipe, GemmRole role);

std::string to_string(Fp8Recipe recipe);

}  // namespace tpsim::model
