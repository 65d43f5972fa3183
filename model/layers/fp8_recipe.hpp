// FP8 training recipes: the quantisation kernels each recipe launches around a linear's three GEMMs
// (forward, data gradient, weight gradient), as torchao runs them under torch.compile (TorchTitan's
// float8 and mx converters) or Transformer Engine under Megatron-Core, with HBM bytes per element of the
// tensor each one quantises.
#pragma once

#include <string>
#include <vector>

#include "base/enum_names.hpp"

namespace tpsim::model {

// tensorwise: one fp32 scale per tensor, e4m3 forward and e5m2 gradients (torchao Float8LinearConfig);
// rowwise: one scale per row, e4m3 throughout, the backward GEMMs rescaled after cuBLAS; blockwise:
// 1x128 activation and 128x128 weight blocks (DeepSeek-V3's recipe, torchao Float8BlockwiseLinear);
// mxfp8: 32-element blocks with e8m0 scales (torchao MXLinear; Blackwell's block-scaled tensor cores);
// delayed: one scale per tensor taken from the amax history of earlier steps (Transformer Engine's
// DelayedScaling: each cast kernel records the amax it sees; no amax pass before it).
enum class Fp8Recipe { kNone, kTensorwise, kDelayed, kRowwise, kBlockwise, kMxfp8 };
// workload.fp8_recipe's values in the order its message lists them; none (dtype bf16) is printed only.
inline constexpr EnumName<Fp8Recipe> kFp8RecipeNames[] = {
    {Fp8Recipe::kTensorwise, "tensorwise"}, {Fp8Recipe::kDelayed, "delayed"},
    {Fp8Recipe::kRowwise, "rowwise"},       {Fp8Recipe::kBlockwise, "blockwise"},
    {Fp8Recipe::kMxfp8, "mxfp8"},           {Fp8Recipe::kNone, "none", NameUse::kPrinted}};

// Whose quantisation kernels run: torchao's (TorchTitan's float8 and mx converters) or Transformer Engine's
// (Megatron-Core's TE linears), as implementation.fp8_kernels names them.
enum class Fp8Kernels { kTorchao, kTransformerEngine };
inline constexpr EnumName<Fp8Kernels> kFp8KernelsNames[] = {{Fp8Kernels::kTorchao, "torchao"},
                                                            {Fp8Kernels::kTransformerEngine, "transformer_engine"}};

// Whether `recipe` scales each tensor by one scale (tensorwise, delayed): what fp8 all-gathers need.
bool per_tensor_scaled(Fp8Recipe recipe);
// Whether `kernels` can run `recipe` (Transformer Engine runs tensorwise, which it calls current scaling, and
// delayed; torchao runs every recipe but delayed).
bool runs_recipe(Fp8Kernels kernels, Fp8Recipe recipe);
// Whether `kernels` cast a linear's weight once per step (Transformer Engine keeps the fp8 weight and its
// transpose from the step's first micro-batch: is_first_microbatch) rather than before every GEMM that reads it.
bool caches_fp8_weights(Fp8Kernels kernels);

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

// The kernels `recipe` runs before a GEMM of `role` with `kernels`' library, in issue order (the weight's first).
const std::vector<QuantKernel>& quant_kernels(Fp8Recipe recipe, GemmRole role,
                                              Fp8Kernels kernels = Fp8Kernels::kTorchao);
// Whether the GEMM's bf16 output is rescaled by a kernel of its own after it (rowwise backward GEMMs:
// cuBLAS's tensorwise kernel with unit scales, then out *= scale; pytorch/ao#2184).
bool rescales_output(Fp8Recipe recipe, GemmRole role);

std::string to_string(Fp8Recipe recipe);
std::string to_string(Fp8Kernels kernels);

}  // namespace tpsim::model
