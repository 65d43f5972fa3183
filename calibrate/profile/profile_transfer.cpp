// Moves a fitted profile to another GPU preset: matmul fractions, fp8 and NVLS availability,
// attention source.
#include "calibrate/profile/profile_transfer.hpp"

#include <algorithm>

#include "base/units.hpp"
#include "calibrate/fits/component_fits.hpp"
#include "calibrate/profile/power_curve.hpp"
#include "calibrate/profile/profile_fit.hpp"

namespace tpsim::calibrate {
namespace {

struct PublishedMamf {
  const char* gpu;
  MamfFractions fractions;
};
// gemm_mamf.csv (torch.mm brute-force shape searches). H200 and H800 share the H100 die; H200's bf16
// fraction is not published and H100's stands for it. A100 has no fp8 tensor cores; the 40 GB part has
// the 80 GB part's die and clocks, and its published fraction stands for it.
const PublishedMamf kPublished[] = {{"h100-sxm", {80.3, 70.9}},         {"h800-sxm", {80.3, 70.9}},
                                    {"h200-sxm", {80.3, 73.4}},         {"b200", {77.6, 76.3}},
                                    {"a100-sxm", {86.9, std::nullopt}}, {"a100-sxm-40gb", {86.9, std::nullopt}}};

// FlashAttention-2's paper (Dao 2023) reports 50-73% of A100's peak in the forward pass; 0.6 lies inside it, one rate
// at every length (no A100 rates by length here). Every carried attention rate's source says it was carried
// (carry_attention_sources).
constexpr double kA100AttentionEfficiency = 0.6;
constexpr const char* kA100AttentionSource =
    "not fitted: FlashAttention-2 (Dao 2023) reaches 50-73% of A100's peak FLOP/s in the forward pass";

}  // namespace

std::optional<MamfFractions> mamf_fractions(const std::string& gpu_name) {
  for (const PublishedMamf& p : kPublished) {
    if (gpu_name == p.gpu) return p.fractions;
  }
  return std::nullopt;
}

void transfer_profile(ProfileFit& fit, const sim::GpuSpec& measured_on, const sim::GpuSpec& target) {
  if (target.name == measured_on.name) return;
  sim::CostProfile& p = fit.profile;
  const std::optional<MamfFractions> from = mamf_fractions(measured_on.name);
  const std::optional<MamfFractions> to = mamf_fractions(target.name);
  if (from && to && from->bf16_pct != to->bf16_pct) {
    p.gemm.efficiency *= to->bf16_pct / from->bf16_pct;
    fit.gemm_source = "efficiency: the " + measured_on.name + " fit's x " + model::format_number("%.1f", to->bf16_pct) +
                      " / " + model::format_number("%.1f", from->bf16_pct) +
                      ", the bf16 max-achievable-matmul fractions of " + target.name + " and " + measured_on.name +
                      " (gemm_mamf.csv); the other values as fitted";
    // An fp8 efficiency derived from the bf16 one follows it; one fitted on fp8 GEMMs stays.
    if (p.gemm.fp8_efficiency && !has_fit(fit, "gemm_fp8")) derive_fp8_efficiency(target, fit);
    if (p.gemm.grouped_efficiency) derive_grouped_efficiency(fit);
  }
  if (p.copy_engine_all_ranks_efficiency && !fit.all_ranks_source.empty()) {
    fit.all_ranks_source = has_fit(fit, "copy_engine_all_ranks")
                               ? carried_all_ranks_source(target.name, measured_on.name, fit.all_ranks_source)
                               : copy_engine_all_ranks_source(target.name);
  }
  if (target.peak_fp8_flops <= 0) {  // no fp8 tensor cores: no fp8 GEMM or attention
    p.gemm.fp8_efficiency.reset();
    fit.fp8_source.clear();
    p.attention.fp8_efficiency.reset();
    fit.attention_fp8_source.clear();
  }
  if (!target.switch_reduction && (p.multimem || p.multimem_gather)) {
    p.multimem.reset();
    p.multimem_gather.reset();
    fit.absent_notes["multimem_gather"] = "no multimem sections: " + target.name +
                                          "'s NVSwitch has no multicast with reduction (switch_reduction: false)";
  }
  if (!target.switch_reduction && p.nvls) {
    p.nvls.reset();
    p.nvls_min_ranks = 2;
    fit.nvls_declined.clear();
    fit.absent_notes["nvls"] = "no nvls section: " + target.name +
                               "'s NVSwitch has no in-switch reduction (switch_reduction: false in its preset)";
  }
  carry_attention_sources(measured_on.name, target, fit);
  if (target.compute_capability / 10 == 8) {  // Ampere runs FlashAttention-2; the Hopper kernels' rates do not apply
    fit.attention_source = kA100AttentionSource;  // the forward's; the backward's stays carried, assumed
    p.attention.kernel = "fa2";
    p.attention.efficiency = kA100AttentionEfficiency;
    p.attention.forward_causal_tokens = 0;
    p.attention.unmasked_efficiency.reset();  // FlashAttention-3's on H100: no A100 rate without a mask here
    p.attention.kernels.clear();
    fit.attention_kernel_sources.clear();
  }
  // The rates carried over describe the target at its stock power: its board power's curve.
  p.power = assumed_power_curve(target, target.board_power_W, p.power);
  fit.power_measured_source =
      "the board power of " + target.name + ": the rates carried over describe it at its stock power";
  fit.transfer_energy_source = assumed_transfer_energy_source(target);
  fit.sustained_ratio_source = sustained_ratio_source(target);
}

}  // namespace tpsim::calibrate
