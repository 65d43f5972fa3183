// Per recipe and GEMM role, the quantisation kernels and their bytes. Sources (torchao, as TorchTitan's
// float8 and mx converters run it under torch.compile): torchao/float8/float8_linear.py
// (matmul_with_hp_or_float8_args: the casts of x and W in forward, of dy, W, dy and x in backward),
// float8_ops.py (preprocess_addmm: transposed operand layouts; addmm_float8_unwrapped: the rowwise
// post-GEMM rescale), and torchao/testing/training/roofline_utils.py (get_tensor_memory_traffic_ovhd_s:
// the bytes each compiled kernel reads and writes, per recipe); blockwise: torchao/prototype/
// blockwise_fp8_training (six Triton kernels, amax inside each); mxfp8: torchao/prototype/mx_formats and
// moe_training/mxfp8_linear.py (dim0 and dim1 casts, then a scale swizzle per GEMM operand). Transformer
// Engine (v2.7-2.9, as Megatron-Core 0.14-0.15 calls it): pytorch/module/linear.py and layernorm_linear.py
// (what each linear casts and saves), pytorch/csrc/quantizer.cpp (Float8Quantizer, Float8CurrentScalingQuantizer),
// common/transpose/cast_transpose.cu (one kernel writing the row-major and the transposed fp8 copies, the amax
// reduced inside it) and common/recipe/current_scaling.cu (current scaling's amax pass).
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
// Transformer Engine, delayed scaling: the scale from the amax history, so each operand is one cast_transpose
// (the row-major copy for this GEMM, the transposed one for the weight gradient, the amax taken inside). The
// forward keeps x's transposed copy and the data gradient's cast writes dy's, so the weight gradient casts nothing;
// the weight's copies are cast once per step (caches_fp8_weights). Left out: an RMSNorm-fed linear's norm writes
// its fp8 output itself and a transpose follows (1 + 2 bytes per element beyond the norm's read, where this
// counts the norm's bf16 write and a cast_transpose, 2 + 4), and the amax history's update, a few kernels over
// the scales per micro-batch.
const Kernels kTeDelayedForward = {{"w.cast_t", kB, kBf16, 2 * kFp8}, {"x.cast_t", kA, kBf16, 2 * kFp8}};
const Kernels kTeDelayedDataGradient = {{"dy.cast_t", kA, kBf16, 2 * kFp8}};
// Transformer Engine, current scaling (its Float8CurrentScaling, per-tensor scales of the tensor itself): an amax
// pass over each operand before its cast_transpose (nvte_compute_amax), then a one-thread scale kernel, left out.
const Kernels kTeCurrentForward = {{"w.amax", kB, kBf16, 0},
                                   {"w.cast_t", kB, kBf16, 2 * kFp8},
                                   {"x.amax", kA, kBf16, 0},
                                   {"x.cast_t", kA, kBf16, 2 * kFp8}};
const Kernels kTeCurrentDataGradient = {{"dy.amax", kA, kBf16, 0}, {"dy.cast_t", kA, kBf16, 2 * kFp8}};
const Kernels kNoKernels;

const std::vector<QuantKernel>& transformer_engine_kernels(Fp8Recipe recipe, GemmRole role) {
  if (role == GemmRole::kWeightGradient) return kNoKernels;
  const bool forward = role == GemmRole::kForward;
  if (recipe == Fp8Recipe::kDelayed) return forward ? kTeDelayedForward : kTeDelayedDataGradient;
  if (recipe == Fp8Recipe::kTensorwise) return forward ? kTeCurrentForward : kTeCurrentDataGradient;
  return kNoKernels;  // runs_recipe refuses the others before any program is built
}

}  // namespace

GemmRole gemm_role_of(const std::string& linear_name) {
  if (linear_name.ends_with(kDataGradientSuffix)) return GemmRole::kDataGradient;
  if (linear_name.ends_with(kWeightGradientSuffix)) return GemmRole::kWeightGradient;
  return GemmRole::kForward;
}

bool per_tensor_scaled(Fp8Recipe recipe) {
  return recipe == Fp8Recipe::kTensorwise || recipe == Fp8Recipe::kDelayed;
}

bool runs_recipe(Fp8Kernels kernels, Fp8Recipe recipe) {
  if (kernels == Fp8Kernels::kTransformerEngine) return recipe == Fp8Recipe::kNone || per_tensor_scaled(recipe);
  return recipe != Fp8Recipe::kDelayed;
}

bool caches_fp8_weights(Fp8Kernels kernels) {
  return kernels == Fp8Kernels::kTransformerEngine;
}

const std::vector<QuantKernel>& quant_kernels(Fp8Recipe recipe, GemmRole role, Fp8Kernels kernels) {
  if (kernels == Fp8Kernels::kTransformerEngine) return transformer_engine_kernels(recipe, role);
  const bool forward = role == GemmRole::kForward, data = role == GemmRole::kDataGradient;
  switch (recipe) {
    case Fp8Recipe::kNone:
      return kNoKernels;
    case Fp8Recipe::kTensorwise:
    case Fp8Recipe::kDelayed:  // runs_recipe refuses it with torchao's kernels
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

std::string to_string(Fp8Kernels kernels) {
  return std::string(name_of(kFp8KernelsNames, kernels));
}

}  // namespace tpsim::model
