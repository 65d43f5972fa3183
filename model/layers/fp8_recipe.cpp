// Per recipe and GEMM role, the quantisation kernels and their bytes. Sources (torchao, as TorchTitan's
// float8 and mx converters run it under torch.compile): torchao/float8/float8_linear.py
// (matmul_with_hp_or_float8_args: the casts of x and W in forward, of dy, W, dy and x in backward),
// float8_ops.py (preprocess_addmm: transposed operand layouts; addmm_float8_unwrapped: the rowwise
// post-GEMM rescale), and torchao/testing/training/roofline_utils.py (get_tensor_memory_traffic_ovhd_s:
// the bytes each compiled kernel reads and writes, per recipe); blockwise: torchao/prototype/
// blockwise_fp8_training (six Triton kernels, amax inside each); mxfp8: torchao/prototype/mx_formats and
// moe_training/mxfp8_linear.py (dim0 and dim1 casts, then a scale swizzle per GEMM operand).
#include "model/layers/fp8_recipe.hpp"

namespace tpsim::model {
namespace {

constexpr double kBf16 = 2.0, kFp8 = 1.0;
constexpr double kTileScale = 4.0 / 128;     // fp32 scale per 1x128 tile
constexpr double kBlockScale = 4.0 / 16384;  // fp32 scale per 128x128 block
constexpr double kMxScale = 1.0 / 32;        // e8m0 scale per 32 elements
constexpr bool kA = false, kB = true;

using Kernels = std::vector<QuantKernel>;

// tensorwise: an amax then a cast per operand. torchao's autograd function saves the bf16 input
// (matmul_with_hp_or_float8_args: save_for_backward(input_hp, weight_hp_t)) and the weight gradient casts
// its transpose again with the forward's scale (TorchTitan's save list keeps that amax); the weight is
// cast again for the data gradient (not saved: pytorch PR 148922), whose output-gradient cast writes the
// row-major and the transposed e5m2 copies, the second read by the weight gradient. Against the
// roofline model's partition (the forward writing x's transposed copy) this re-reads x: 2 bytes per
// element more.
const Kernels kTensorwiseForward = {
    {"w.amax", kB, kBf16, 0}, {"w.cast", kB, kBf16, kFp8}, {"x.amax", kA, kBf16, 0}, {"x.cast", kA, kBf16, kFp8}};
const Kernels kTensorwiseDataGradient = {
    {"w.cast", kB, kBf16, kFp8}, {"dy.amax", kA, kBf16, 0}, {"dy.cast", kA, kBf16, 2 * kFp8}};
const Kernels kTensorwiseWeightGradient = {{"x.cast_t", kA, kBf16, kFp8}};
// rowwise: dim0 casts fuse their row amax; a dim1 (column-scaled) copy needs its column amax first, a
// second pass (roofline_utils: "we can't fuse 2 and 3").
const Kernels kRowwiseForward = {{"w.cast", kB, kBf16, kFp8}, {"x.cast", kA, kBf16, kFp8}};
const Kernels kRowwiseDataGradient = {
    {"w.amax_t", kB, kBf16, 0}, {"w.cast_t", kB, kBf16, kFp8}, {"dy.cast", kA, kBf16, kFp8}};
const Kernels kRowwiseWeightGradient = {{"x.amax_t", kA, kBf16, 0},
                                        {"x.cast_t", kA, kBf16, kFp8},
                                        {"dy.amax_t", kB, kBf16, 0},
                                        {"dy.cast_t", kB, kBf16, kFp8}};
// blockwise: one Triton kernel per operand layout; bf16 x and W are saved, all re-quantised backward.
const Kernels kBlockwiseForward = {{"w.quant_t", kB, kBf16, kFp8 + kBlockScale},
                                   {"x.quant", kA, kBf16, kFp8 + kTileScale}};
const Kernels kBlockwiseDataGradient = {{"w.quant", kB, kBf16, kFp8 + kBlockScale},
                                        {"dy.quant", kA, kBf16, kFp8 + kTileScale}};
const Kernels kBlockwiseWeightGradient = {{"x.quant_t", kA, kBf16, kFp8 + kTileScale},
                                          {"dy.quant_t", kB, kBf16, kFp8 + kTileScale}};
// mxfp8: a dim0 (Triton) or dim1 (CUDA) cast per operand, then its scales swizzled to the blocked layout
// torch._scaled_mm reads (mx_tensor.py: to_blocked on both operands before every GEMM).
const Kernels kMxfp8Forward = {{"w.cast", kB, kBf16, kFp8 + kMxScale},
                               {"w.swizzle", kB, kMxScale, kMxScale},
                               {"x.cast", kA, kBf16, kFp8 + kMxScale},
                               {"x.swizzle", kA, kMxScale, kMxScale}};
const Kernels kMxfp8DataGradient = {{"w.cast_t", kB, kBf16, kFp8 + kMxScale},
                                    {"w.swizzle", kB, kMxScale, kMxScale},
                                    {"dy.cast", kA, kBf16, kFp8 + kMxScale},
                                    {"dy.swizzle", kA, kMxScale, kMxScale}};
const Kernels kMxfp8WeightGradient = {{"x.cast_t", kA, kBf16, kFp8 + kMxScale},
                                      {"x.swizzle", kA, kMxScale, kMxScale},
                                      {"dy.cast_t", kB, kBf16, kFp8 + kMxScale},
                                      {"dy.swizzle", kB, kMxScale, kMxScale}};
const Kernels kNoKernels;

}  // namespace

GemmRole gemm_role_of(const std::string& linear_name) {
  if (linear_name.ends_with(kDataGradientSuffix)) return GemmRole::kDataGradient;
  if (linear_name.ends_with(kWeightGradientSuffix)) return GemmRole::kWeightGradient;
  return GemmRole::kForward;
}

const std::vector<QuantKernel>& quant_kernels(Fp8Recipe recipe, GemmRole role) {
  const bool forward = role == GemmRole::kForward, data = role == GemmRole::kDataGradient;
  switch (recipe) {
    case Fp8Recipe::kNone:
      return kNoKernels;
    case Fp8Recipe::kTensorwise:
      return forward ? kTensorwiseForward : data ? kTensorwiseDataGradient : kTensorwiseWeightGradient;
    case Fp8Recipe::kRowwise:
      return forward ? kRowwiseForward : data ? kRowwiseDataGradient : kRowwiseWeightGradient;
    case Fp8Recipe::kBlockwise:
      return forward ? kBlockwiseForward : data ? kBlockwiseDataGradient : kBlockwiseWeightGradient;
    case Fp8Recipe::kMxfp8:
      return forward ? kMxfp8Forward : data ? kMxfp8DataGradient : kMxfp8WeightGradient;
  }
  return kNoKernels;
}

bool rescales_output(Fp8Recipe recipe, GemmRole role) {
  return recipe == Fp8Recipe::kRowwise && role != GemmRole::kForward;
}

std::string to_string(Fp8Recipe recipe) {
  return std::string(name_of(kFp8RecipeNames, recipe));
}

}  // namespace tpsim::model
