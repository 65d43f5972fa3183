// Assumed power curves, each value with its reason.
#include "calibrate/power_curve.hpp"

namespace tpsim::calibrate {
namespace {

// Published nvidia-smi snapshots: H100 80 GB HBM3 boards idle at 68-73 W of their 700 W, A100 SXM4 at
// 46-51 W of 400 W: about a tenth of the board power.
constexpr double kIdleShareOfBoard = 0.1;
// Dynamic power ~ C V^2 f with the voltage following the clock through the DVFS range.
constexpr double kAssumedExponent = 3.0;

}  // namespace

std::optional<sim::PowerParams> assumed_power_curve(const sim::GpuSpec& gpu, double measured_at_W,
                                                    const std::optional<sim::PowerParams>& kept) {
  if (gpu.board_power_W <= 0 || measured_at_W <= 0) return std::nullopt;
  sim::PowerParams p;
  p.measured_at_W = measured_at_W;
  p.idle_W = kIdleShareOfBoard * gpu.board_power_W;
  p.exponent = kept ? kept->exponent : kAssumedExponent;
  return p;
}

std::string idle_power_source() {
  return "assumed: a tenth of the board power (published nvidia-smi snapshots: H100 80 GB HBM3 idles at 68-73 W of "
         "700 W, A100 SXM4 at 46-51 W of 400 W)";
}

std::string power_exponent_source() {
  return "assumed: dynamic power ~ f V^2 with the voltage following the clock (fit it on tpsim-real's clock and "
         "power readings under several limits)";
}

}  // namespace tpsim::calibrate
