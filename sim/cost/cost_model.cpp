// Cost formulas; every parameter comes from the GPU spec or the calibration profile.
#include "sim/cost/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/input_error.hpp"
#include "sim/cost/collective_time.hpp"
#include "sim/cost/power_limit.hpp"

namespace tpsim::sim {
namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

GemmTiling CostModel::gemm_tiling(const model::GemmShape& shape) const {
  const GemmParams& g = profile_.gemm;
  // A grouped GEMM's problems (tiles of every problem in one launch): each problem's rows set its tile.
  const int64_t groups = std::max<int64_t>(1, shape.groups);
  const bool split_m = groups > 1 && !shape.groups_split_k;
  const int64_t problem_m = split_m ? ceil_div(shape.m, groups) : shape.m;
  const int64_t tile_m = problem_m <= g.small_m_tile_m ? g.small_m_tile_m : g.tile_m;
  const int64_t tile_n = g.tile_n;
  const int64_t sms = gpu_.sm_count;
  GemmTiling t;
  const int64_t rows = groups * ceil_div(problem_m, tile_m);
  const int64_t cols = ceil_div(shape.n, tile_n);
  t.tiles = rows * cols;
  if (t.tiles < sms && groups == 1) {
    // Skinny GEMMs (M <= small_m_tile_m: decode steps, GEMV-like kernels) split K over every SM, as cuBLAS's
    // split-K and GEMV kernels for small M do; larger ones only while each split keeps min_k_per_split of K.
    // Grouped kernels do not split K.
    const bool skinny = shape.m <= g.small_m_tile_m;
    const int64_t by_sms = sms / t.tiles;
    const int64_t by_k = skinny ? by_sms : std::max<int64_t>(1, shape.k / g.min_k_per_split);
    t.splits = std::max<int64_t>(1, std::min(by_sms, by_k));
  }
  const int64_t work = t.tiles * t.splits;
  t.waves = ceil_div(work, sms);
  t.wave_efficiency = static_cast<double>(work) / static_cast<double>(t.waves * sms);
  const double outputs =
      static_cast<double>(shape.m * shape.n) * (shape.groups_split_k ? static_cast<double>(groups) : 1.0);
  t.tile_efficiency = outputs / static_cast<double>(rows * tile_m * cols * tile_n);
  return t;
}

// Why fp8 work whose efficiency the profile gives as `efficiency` (named `key`) cannot run; empty if it can.
std::string CostModel::fp8_reason(const std::optional<double>& efficiency, const std::string& key) const {
  if (gpu_.peak_fp8_flops <= 0) return "GPU " + gpu_.name + " has no fp8 peak (peak_fp8_tflops) in its preset";
  if (!efficiency) return "profile " + profile_.name + " has no " + key;
  return "";
}

std::string CostModel::fp8_unsupported_reason() const {
  return fp8_reason(profile_.gemm.fp8_efficiency, "gemm.fp8_efficiency (fit one on fp8 GEMM measurements)");
}

std::string CostModel::fp8_attention_unsupported_reason() const {
  return fp8_reason(profile_.attention.fp8_efficiency, "attention.fp8_efficiency");
}

std::string CostModel::attention_backward_unsupported_reason() const {
  if (profile_.attention.backward_efficiency) return "";
  return "profile " + profile_.name +
         " has no attention.backward_efficiency (FlashAttention's backward), which phase train needs; add it or base "
         "the profile on a preset";
}

double CostModel::attention_backward_rate() const {
  if (const std::string why = attention_backward_unsupported_reason(); !why.empty()) throw InputError(why);
  return gpu_.peak_bf16_flops * *profile_.attention.backward_efficiency * clock_ratio_;
}

// A backward at the unmasked rate, its causal diagonal's tiles costing attention.backward_causal_tokens more.
double CostModel::attention_backward_seconds(const model::Op& op) const {
  return op.flops / attention_backward_rate() *
         (1.0 + profile_.attention.backward_causal_tokens * op.causal_inverse_length);
}

// A forward: a block without a mask at the unmasked rate; a causal one at the causal rate over long sequences, its
// length's short rows and diagonal costing attention.forward_causal_tokens more (bf16; fp8's is one rate).
double CostModel::attention_forward_seconds(const model::Op& op) const {
  const bool unmasked = op.causal_inverse_length == 0;
  const double seconds = op.flops / attention_rate(op.fp8, unmasked);
  if (unmasked || op.fp8) return seconds;
  return seconds * (1.0 + profile_.attention.forward_causal_tokens * op.causal_inverse_length);
}

double CostModel::attention_rate(bool fp8, bool unmasked) const {
  const double clock = clock_ratio_;
  if (!fp8) {
    const AttentionParams& a = profile_.attention;
    return gpu_.peak_bf16_flops * (unmasked && a.unmasked_efficiency ? *a.unmasked_efficiency : a.efficiency) * clock;
  }
  if (const std::string why = fp8_attention_unsupported_reason(); !why.empty()) throw InputError(why);
  return gpu_.peak_fp8_flops * *profile_.attention.fp8_efficiency * clock;
}

// Full-wave tensor-core rate of a GEMM in bf16 or fp8 (checked by fp8_unsupported_reason first).
double CostModel::tensor_rate(bool fp8) const {
  const double clock = clock_ratio_;
  if (!fp8) return gpu_.peak_bf16_flops * profile_.gemm.efficiency * clock;
  if (const std::string why = fp8_unsupported_reason(); !why.empty()) throw InputError(why);
  return gpu_.peak_fp8_flops * *profile_.gemm.fp8_efficiency * clock;
}

std::string CostModel::linear_attention_unsupported_reason() const {
  if (profile_.linear_attention) return "";
  return "profile " + profile_.name +
         " has no linear_attention section (the gated delta rule's kernels of a hybrid stack); add it or base the "
         "profile on a preset";
}

// A linear-attention kernel (model/graph/op.hpp's LinearScan): the chunked form's FLOPs at its rate plus its state
// pass's sequential chunk steps, in waves of chains over the SMs; the recurrent form streams each sequence's
// state at its own HBM efficiency.
KernelCost CostModel::linear_attention_cost(const model::Op& op) const {
  if (const std::string why = linear_attention_unsupported_reason(); !why.empty()) throw InputError(why);
  const LinearAttentionParams& l = *profile_.linear_attention;
  const double clock = clock_ratio_;
  KernelCost k;
  k.memory_bytes = op.bytes_read + op.bytes_written;
  k.compute_s = op.flops / (gpu_.peak_bf16_flops * l.efficiency * clock);
  if (op.linear_scan.kernel == model::LinearKernel::kChunked) {
    const int64_t sms = std::max(1, gpu_.sm_count);
    const int64_t waves = (op.linear_scan.chains + sms - 1) / sms;
    k.compute_s += static_cast<double>(op.linear_scan.chunk_steps * waves) * l.chunk_step_s / clock;
    if (op.stage == model::OpStage::kBackward) k.compute_s *= l.backward_ratio;
    k.overhead_s = profile_.gemm.overhead_s;
    k.hbm_efficiency = profile_.memory.hbm_efficiency;
  } else {
    k.overhead_s = l.decode_overhead_s;
    k.hbm_efficiency = l.decode_hbm_efficiency;
  }
  k.memory_s = k.memory_bytes / (gpu_.hbm_Bps * k.hbm_efficiency);
  return k;
}

std::string CostModel::grouped_gemm_unsupported_reason() const {
  if (profile_.gemm.grouped_efficiency) return "";
  return "profile " + profile_.name +
         " has no gemm.grouped_efficiency (grouped GEMMs of an MoE layer's experts); add it or base the profile on a "
         "preset";
}

double CostModel::gemm_compute_seconds(const model::GemmShape& shape, bool fp8) const {
  const GemmTiling t = gemm_tiling(shape);
  double rate = tensor_rate(fp8);
  if (shape.groups > 1) {
    // A grouped kernel keeps the fraction of the dense rate its bf16 fit gives: assumed alike at fp8 (no public
    // fp8 grouped timings beside dense ones of the same kernels fit it yet).
    if (const std::string why = grouped_gemm_unsupported_reason(); !why.empty()) throw InputError(why);
    rate *= *profile_.gemm.grouped_efficiency / profile_.gemm.efficiency;
  }
  return model::gemm_flops(shape) / (rate * t.wave_efficiency * t.tile_efficiency);
}

double CostModel::gemm_seconds(const model::GemmShape& shape, double bytes, bool fp8) const {
  const GemmParams& g = profile_.gemm;
  const double memory_s = bytes / (gpu_.hbm_Bps * g.hbm_efficiency);
  return g.overhead_s + std::max(gemm_compute_seconds(shape, fp8), memory_s);
}

double CostModel::memory_seconds(double bytes) const {
  return profile_.memory.overhead_s + bytes / (gpu_.hbm_Bps * profile_.memory.hbm_efficiency);
}

KernelCost CostModel::kernel_cost(const model::Op& op) const {
  KernelCost k;
  k.memory_bytes = op.bytes_read + op.bytes_written;
  switch (op.kind) {
    case model::OpKind::kGemm: {
      k.overhead_s = op.continues_kernel ? 0.0 : profile_.gemm.overhead_s;
      k.compute_s = gemm_compute_seconds(op.gemm, op.fp8);
      if (op.fused_rows > op.gemm.m) {
        // A part of a tile-fused kernel: its rows' share of the whole kernel's waves.
        const model::GemmShape whole{op.fused_rows, op.gemm.n, op.gemm.k};
        k.compute_s =
            gemm_compute_seconds(whole, op.fp8) * static_cast<double>(op.gemm.m) / static_cast<double>(op.fused_rows);
      }
      k.hbm_efficiency = profile_.gemm.hbm_efficiency;
      break;
    }
    case model::OpKind::kAttention:
      if (op.linear_scan.kernel != model::LinearKernel::kNone) return linear_attention_cost(op);
      k.overhead_s = profile_.gemm.overhead_s;
      k.compute_s =
          op.stage == model::OpStage::kBackward ? attention_backward_seconds(op) : attention_forward_seconds(op);
      k.hbm_efficiency = profile_.memory.hbm_efficiency;
      break;
    case model::OpKind::kMemory:
      k.overhead_s = op.continues_kernel ? 0.0 : profile_.memory.overhead_s;
      k.hbm_efficiency = profile_.memory.hbm_efficiency;
      break;
    default:
      return KernelCost{};
  }
  k.memory_s = k.memory_bytes / (gpu_.hbm_Bps * k.hbm_efficiency);
  return k;
}

const TransportParams& CostModel::transport(model::Transport transport) const {
  return transport == model::Transport::kSm ? profile_.nccl : profile_.copy_engine;
}

TransportParams CostModel::exchange_transport(model::Transport kind) const {
  TransportParams t = transport(kind);
  if (kind == model::Transport::kCopyEngine && profile_.copy_engine_all_ranks_efficiency) {
    t.link_efficiency = *profile_.copy_engine_all_ranks_efficiency;
  }
  return t;
}

double CostModel::step_seconds(model::Transport kind, double bytes) const {
  return sim::step_seconds(transport(kind), bytes, port_Bps());  // the closed form (sim/cost/collective_time.hpp)
}

}  // namespace tpsim::sim
