// The clock a power limit allows: solving the profile's power curve for the SM clock.
#include "sim/power_limit.hpp"

#include <cmath>

#include "model/units.hpp"

namespace tpsim::sim {

double clock_ratio_at(const PowerParams& power, double limit_W) {
  if (limit_W >= power.measured_at_W) return 1.0;
  const double dynamic_share = (limit_W - power.idle_W) / (power.measured_at_W - power.idle_W);
  return std::pow(dynamic_share, 1.0 / power.exponent);
}

double compute_clock_ratio(const GpuSpec& gpu, const CostProfile& profile) {
  if (gpu.power_limit_W <= 0 || !profile.power) return 1.0;
  return clock_ratio_at(*profile.power, gpu.power_limit_W);
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
  return "";
}

}  // namespace tpsim::sim
