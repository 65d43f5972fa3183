// The tail a GEMM pays beside an SM-holding partner, fitted on overlap points (shared_tail_fit.hpp).
#include "calibrate/fits/shared_tail_fit.hpp"

#include <algorithm>
#include <cmath>

#include "sim/cost/cost_model.hpp"

namespace tpsim::calibrate {

bool is_partner_first_copy_kernel(const Measurement& m) {
  const auto& d = m.details;
  return m.kind == "overlap" && m.pattern == "copy_kernel" && d.contains("blocks") && d["blocks"].is_number() &&
         d.contains("partner_first") && d["partner_first"].is_boolean() && d["partner_first"].get<bool>() &&
         m.gemm_alone_s > 0 && m.partner_alone_s > 0 && m.gemm_overlapped_s > 0;
}

double predicted_shared_slowdown(const Measurement& m, double tail_tiles, const sim::GpuSpec& gpu,
                                 const sim::CostProfile& profile) {
  const int blocks = m.details["blocks"].get<int>();
  const double alone = m.gemm_alone_s, partner = m.partner_alone_s;
  if (blocks >= gpu.sm_count) return (partner + alone) / alone;  // waits for every SM, then runs alone
  const double share = 1.0 - static_cast<double>(blocks) / gpu.sm_count;
  // Alone-seconds of work done by the partner's end; the rest at the full rate.
  const double ran_s = share * partner >= alone ? alone / share : partner + (alone - share * partner);
  const sim::CostModel cost(gpu, profile);
  const int64_t waves = cost.gemm_tiling(model::GemmShape{m.m, m.n, m.k}).waves;
  const double tile_s = alone / static_cast<double>(std::max<int64_t>(1, waves));
  return (ran_s + tail_tiles * tile_s) / alone;
}

double fit_shared_tail(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu,
                       const sim::CostProfile& profile, ComponentFit& fit) {
  constexpr int kMaxHundredths = 400;
  const auto worst = [&](double tail) {
    double max_error = 0;
    for (const Measurement* m : points) {
      const double measured = m->gemm_overlapped_s / m->gemm_alone_s;
      max_error = std::max(max_error, std::abs(predicted_shared_slowdown(*m, tail, gpu, profile) / measured - 1.0));
    }
    return max_error;
  };
  int best = 0;
  for (int h = 1; h <= kMaxHundredths; ++h) {
    if (worst(h / 100.0) < worst(best / 100.0)) best = h;
  }
  const double tail = best / 100.0;
  fit = ComponentFit{};
  fit.name = "gemm_shared_tail";
  for (const Measurement* m : points) {
    const double measured = m->gemm_overlapped_s / m->gemm_alone_s;
    fit.errors.push_back({m->origin, 100.0 * (predicted_shared_slowdown(*m, tail, gpu, profile) / measured - 1.0)});
    fit.max_abs_error_pct = std::max(fit.max_abs_error_pct, std::abs(fit.errors.back().error_pct));
  }
  return tail;
}

}  // namespace tpsim::calibrate
