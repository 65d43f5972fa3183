// The clock a power limit allows: solving the profile's power curve for the SM clock.
#include "sim/cost/power_limit.hpp"

#include <algorithm>
#include <cmath>

#include "base/units.hpp"

namespace tpsim::sim {

namespace {

// The rate ratio at which the curve draws measured_at_W: the sustained ratio, or 1 where the profile has none.
double curve_anchor(const PowerParams& power) {
  return power.sustained_ratio > 0 ? power.sustained_ratio : 1.0;
}

}  // namespace

double clock_ratio_at(const PowerParams& power, double limit_W) {
  if (power.sustained_ratio <= 0 && limit_W >= power.measured_at_W) return 1.0;
  const double anchor = curve_anchor(power);
  const double dynamic_share = (limit_W - power.idle_W) / (power.measured_at_W - power.idle_W);
  return std::min(1.0, anchor * std::pow(dynamic_share, 1.0 / power.exponent));
}

double compute_dynamic_W(const PowerParams& power, double ratio) {
  return (power.measured_at_W - power.idle_W) * std::pow(ratio / curve_anchor(power), power.exponent);
}

CostProfile short_benchmark_profile(CostProfile profile) {
  if (profile.power) profile.power->sustained_ratio = 0;
  return profile;
}

bool windowed_power(const CostProfile& profile) {
  return profile.power && profile.power->sustained_ratio > 0;
}

double binding_limit_W(const GpuSpec& gpu, const PowerParams& power) {
  return gpu.power_limit_W > 0 ? gpu.power_limit_W : power.measured_at_W;
}

double compute_clock_ratio(const GpuSpec& gpu, const CostProfile& profile) {
  if (gpu.power_limit_W <= 0 || !profile.power || windowed_power(profile)) return 1.0;
  return clock_ratio_at(*profile.power, gpu.power_limit_W);
}

double back_to_back_clock_ratio(const GpuSpec& gpu, const CostProfile& profile) {
  if (!windowed_power(profile)) return compute_clock_ratio(gpu, profile);
  return clock_ratio_at(*profile.power, binding_limit_W(gpu, *profile.power));
}

namespace {

// The rate ratio in [kMinClockRatio, 1] at which the window's energy above the limit's is 0, the compute-bound time
// scaling as 1 / ratio from `simulated_ratio` and the span `span_of(compute_s at the ratio)`: increasing in the ratio
// (the compute-bound kernels' energy grows as r^(exponent - 1), the span never grows), so its root is found by
// bisection.
template <class SpanOf>
double window_root(const GpuSpec& gpu, const CostProfile& profile, const WindowDraw& draw, double simulated_ratio,
                   SpanOf span_of) {
  if (!windowed_power(profile) || draw.span_s <= 0) return 1.0;
  const PowerParams& power = *profile.power;
  const double limit_W = binding_limit_W(gpu, power);
  const auto excess_J = [&](double r) {
    const double compute_s = draw.compute_s * simulated_ratio / r;
    const double span_s = span_of(compute_s);
    return power.idle_W * span_s + compute_s * compute_dynamic_W(power, r) + draw.other_J - limit_W * span_s;
  };
  if (excess_J(1.0) <= 0) return 1.0;
  double low = kMinClockRatio, high = 1.0;
  if (excess_J(low) >= 0) return low;
  // 60 halvings put the root within 1e-18 of the interval's width: below a double's resolution of a ratio near 1.
  constexpr int kBisections = 60;
  for (int i = 0; i < kBisections; ++i) {
    const double mid = 0.5 * (low + high);
    (excess_J(mid) > 0 ? high : low) = mid;
  }
  return low;
}

}  // namespace

double window_clock_ratio(const GpuSpec& gpu, const CostProfile& profile, const WindowDraw& draw,
                          double simulated_ratio) {
  // The span lengthens or shortens with the compute-bound time.
  return window_root(gpu, profile, draw, simulated_ratio,
                     [&](double compute_s) { return draw.span_s + compute_s - draw.compute_s; });
}

double held_span_clock_ratio(const GpuSpec& gpu, const CostProfile& profile, const WindowDraw& draw,
                             double simulated_ratio) {
  return window_root(gpu, profile, draw, simulated_ratio, [&](double) { return draw.span_s; });
}

namespace {

double bits_power_W(double Bps, double pJ_per_bit) {
  constexpr double kBitsPerByte = 8, kJoulesPerPicojoule = 1e-12;
  return Bps * kBitsPerByte * pJ_per_bit * kJoulesPerPicojoule;
}

}  // namespace

double transfer_power_W(const CostProfile& profile, double Bps) {
  return profile.power ? bits_power_W(Bps, profile.power->transfer_pJ_per_bit) : 0.0;
}

double extra_hbm_power_W(const GpuSpec& gpu, const CostProfile& profile, double Bps) {
  return profile.power ? bits_power_W(Bps, gpu.hbm_pJ_per_bit) : 0.0;
}

double hbm_energy_J(const GpuSpec& gpu, double bytes) {
  return bits_power_W(bytes, gpu.hbm_pJ_per_bit);
}

double transfer_energy_J(const GpuSpec& gpu, const CostProfile& profile, double bytes, double extra_accesses) {
  if (!profile.power) return 0.0;
  return bits_power_W(2 * bytes, profile.power->transfer_pJ_per_bit) + hbm_energy_J(gpu, bytes * extra_accesses);
}

double clock_factor_beside_transfers(const GpuSpec& gpu, const CostProfile& profile, double transfer_W) {
  if (!profile.power || transfer_W <= 0) return 1.0;
  const PowerParams& power = *profile.power;
  const double limit_W = binding_limit_W(gpu, power);
  // The SMs keep at least a twentieth of their dynamic power: a guard against draws no port can reach,
  // not a measured floor.
  constexpr double kMinDynamicShare = 0.05;
  const double floor_W = power.idle_W + kMinDynamicShare * (power.measured_at_W - power.idle_W);
  const double alone = clock_ratio_at(power, limit_W);
  const double beside = clock_ratio_at(power, std::max(floor_W, limit_W - transfer_W));
  return std::min(1.0, beside / alone);
}

std::string power_limit_unsupported_reason(const GpuSpec& gpu, const CostProfile& profile) {
  if (gpu.power_limit_W <= 0) return "";
  const std::string limit = model::format_number("%g", gpu.power_limit_W) + " W";
  if (!profile.power) {
    if (gpu.power_limit_W >= gpu.board_power_W) return "";  // the stock limit the profile was measured at
    return "a power limit of " + limit + " needs the profile's power section (profile " + profile.name +
           " has none): measured_at_W, idle_W, exponent";
  }
  if (gpu.power_limit_W >= profile.power->measured_at_W) return "";
  if (gpu.power_limit_W <= profile.power->idle_W) {
    return "a power limit of " + limit + " is not above the profile's idle draw (power.idle_W " +
           model::format_number("%g", profile.power->idle_W) + " W); valid: above it, up to the board's " +
           model::format_number("%g", gpu.board_power_W) + " W";
  }
  const PowerParams& power = *profile.power;
  if (const double ratio = clock_ratio_at(power, gpu.power_limit_W); ratio < kMinClockRatio) {
    // The curve's power at the floor's clock: the lowest limit it models.
    const double lowest_W =
        power.idle_W + (power.measured_at_W - power.idle_W) * std::pow(kMinClockRatio, power.exponent);
    return "a power limit of " + limit + " puts the SM clock at " + model::format_number("%.3g", ratio) +
           " of the clock the profile was measured at, below tpsim's floor of " +
           model::format_number("%.3g", kMinClockRatio) +
           " (an H200's lowest SM clock over its clock at the measured limit; no GPU clocks lower); valid: at least " +
           model::format_number("%g", std::ceil(lowest_W)) + " W";
  }
  return "";
}

}  // namespace tpsim::sim
