// The transfer-energy fit: a one-dimensional search over the closed form of a GEMM beside a peer copy.
#include "calibrate/fits/transfer_energy_fit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "calibrate/fits/fit_measure.hpp"
#include "sim/cost/power_limit.hpp"

namespace tpsim::calibrate {
namespace {

constexpr double kStepPjPerBit = 0.05;

sim::CostProfile with_energy(const sim::CostProfile& base, double pj_per_bit) {
  sim::CostProfile p = base;
  p.power->transfer_pJ_per_bit = pj_per_bit;
  return p;
}

double predicted_overlapped_s(const Measurement& m, const sim::GpuSpec& gpu, const sim::CostProfile& profile) {
  return gemm_beside_copy_seconds(gpu, profile, m.gemm_alone_s, m.partner_alone_s, m.bytes);
}

double best_energy(const std::vector<const Measurement*>& points, const std::vector<size_t>& index,
                   const sim::GpuSpec& gpu, const sim::CostProfile& base) {
  double best = 0, best_error = std::numeric_limits<double>::infinity();
  const auto steps = static_cast<int>(std::lround(sim::kMaxEnergyPjPerBit / kStepPjPerBit));
  for (int step = 0; step <= steps; ++step) {
    const sim::CostProfile profile = with_energy(base, step * kStepPjPerBit);
    double error = 0;
    for (size_t i : index) {
      error += std::pow(std::log(predicted_overlapped_s(*points[i], gpu, profile) / points[i]->gemm_overlapped_s), 2);
    }
    if (error < best_error) {
      best_error = error;
      best = step * kStepPjPerBit;
    }
  }
  return best;
}

}  // namespace

double gemm_beside_copy_seconds(const sim::GpuSpec& gpu, const sim::CostProfile& profile, double gemm_s, double copy_s,
                                double bytes) {
  const double draw_W = sim::transfer_power_W(profile, bytes / copy_s);
  const double clock = sim::clock_factor_beside_transfers(gpu, profile, draw_W);
  // The copy outlasts the GEMM: all of it at the lower clock; else the copy's span at the lower clock, the
  // rest at full clock.
  return std::min(gemm_s / clock, gemm_s + copy_s * (1 - clock));
}

void fit_transfer_energy(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu, ProfileFit& out) {
  if (!out.profile.power || points.size() < 2) return;
  const sim::CostProfile base = out.profile;
  double energy = base.power->transfer_pJ_per_bit;
  out.fits.push_back(measure<double>(
      "transfer_energy", points,
      [&](const std::vector<size_t>& index) { return best_energy(points, index, gpu, base); },
      [&](const double& e, size_t i) {
        // The point's error is its overlapped GEMM time's, compared as a time below.
        return predicted_overlapped_s(*points[i], gpu, with_energy(base, e)) / points[i]->gemm_overlapped_s *
               points[i]->median_s;
      },
      &energy));
  out.profile.power->transfer_pJ_per_bit = energy;
  out.transfer_energy_source = "fitted on " + std::to_string(points.size()) +
                               " GEMMs beside one-way peer copies (overlapped GEMM time; the copy's draw lowers "
                               "the clock the power limit allows)";
}

}  // namespace tpsim::calibrate
