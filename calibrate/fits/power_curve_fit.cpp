// The power curve's fit: a search over idle_W, the exponent and scale by least squares on the log readings.
#include "calibrate/fits/power_curve_fit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "base/input_error.hpp"
#include "base/units.hpp"
#include "calibrate/fits/fit_measure.hpp"

namespace tpsim::calibrate {
namespace {

// idle_W's search step: below the 1 W resolution nvidia-smi prints power limits at.
constexpr double kIdleStepW = 0.5;
// The largest median power over the smallest: assumed; NVML's power readings are 1 s averages within a few
// percent of each other at one limit, so 10% apart separates the curve from their noise.
constexpr double kMinPowerSpan = 1.1;
// Plausible exponents: dynamic power ~ f V^2 gives 1 (voltage at its floor) to about 3 (voltage following the
// clock); 8 leaves room for a steep voltage curve and stays inside what a profile accepts (0.5 to 10).
constexpr double kMinExponent = 0.5, kMaxExponent = 8.0;
constexpr size_t kMinPoints = 4;  // three values fitted: one point more tells their error
// A limit read within this of the GPU's own counts as the GPU's own (NVML gives limits in mW; presets in W).
constexpr double kLimitToleranceW = 1.0;

// log f = slope log(P - idle) + intercept: slope = 1 / exponent, intercept = -log(A) / exponent.
struct Curve {
  double idle_W = 0, slope = 0, intercept = 0;
  double exponent() const { return 1.0 / slope; }
  double clock_mhz(double power_W) const { return std::exp(slope * std::log(power_W - idle_W) + intercept); }
};

double clock_of(const Measurement& m) {
  return m.gpu_state.sm_clock_mhz.median;
}
double power_of(const Measurement& m) {
  return m.gpu_state.power_W.median;
}

// The least-squares line of log clock on log(power - idle) over `index`, and its squared error.
std::pair<Curve, double> line_at(const std::vector<const Measurement*>& points, const std::vector<size_t>& index,
                                 double idle_W) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const auto n = static_cast<double>(index.size());
  for (size_t i : index) {
    const double x = std::log(power_of(*points[i]) - idle_W), y = std::log(clock_of(*points[i]));
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  Curve c;
  c.idle_W = idle_W;
  const double spread = sxx - sx * sx / n;
  c.slope = spread > 0 ? (sxy - sx * sy / n) / spread : 0.0;
  c.intercept = (sy - c.slope * sx) / n;
  double error = 0;
  for (size_t i : index) error += std::pow(std::log(c.clock_mhz(power_of(*points[i])) / clock_of(*points[i])), 2);
  return {c, error};
}

Curve best_curve(const std::vector<const Measurement*>& points, const std::vector<size_t>& index) {
  double lowest = std::numeric_limits<double>::infinity();
  for (size_t i : index) lowest = std::min(lowest, power_of(*points[i]));
  Curve best;
  double best_error = std::numeric_limits<double>::infinity();
  for (double idle = 0; idle < lowest - kIdleStepW; idle += kIdleStepW) {
    const auto [curve, error] = line_at(points, index, idle);
    if (curve.slope > 0 && error < best_error) {
      best = curve;
      best_error = error;
    }
  }
  if (best.slope <= 0) throw InputError("the clocks do not rise with the power drawn");
  const double exponent = best.exponent();
  if (exponent < kMinExponent || exponent > kMaxExponent) {
    throw InputError("the readings imply an exponent of " + model::format_number("%.3g", exponent) + ", outside [" +
                     model::format_number("%g", kMinExponent) + ", " + model::format_number("%g", kMaxExponent) +
                     "]: time one compute-bound GEMM shape at several power limits");
  }
  return best;
}

// The shape with most points that carry readings, and those points.
std::vector<const Measurement*> largest_shape_group(const std::vector<const Measurement*>& gemms) {
  std::map<std::tuple<int64_t, int64_t, int64_t, std::string>, std::vector<const Measurement*>> groups;
  for (const Measurement* m : gemms) {
    if (m->gpu_state.recorded && clock_of(*m) > 0 && power_of(*m) > 0) {
      groups[{m->m, m->n, m->k, m->dtype}].push_back(m);
    }
  }
  std::vector<const Measurement*> best;
  for (const auto& [shape, points] : groups) {
    if (points.size() > best.size()) best = points;
  }
  return best;
}

bool spans_powers(const std::vector<const Measurement*>& points) {
  if (points.size() < kMinPoints) return false;
  const auto [low, high] = std::minmax_element(
      points.begin(), points.end(), [](const auto* a, const auto* b) { return power_of(*a) < power_of(*b); });
  return power_of(**high) >= kMinPowerSpan * power_of(**low);
}

}  // namespace

bool ran_below_power_limit(const Measurement& m, const sim::GpuSpec& gpu) {
  const double limit = m.gpu_state.power_limit_W;
  return m.gpu_state.recorded && limit > 0 && gpu.power_limit_W > 0 && limit < gpu.power_limit_W - kLimitToleranceW;
}

void fit_power_curve(const std::vector<const Measurement*>& gemms, const sim::GpuSpec& gpu, ProfileFit& out) {
  const std::vector<const Measurement*> points = largest_shape_group(gemms);
  if (!spans_powers(points)) {
    std::vector<const Measurement*> capped;
    for (const Measurement* m : gemms) {
      if (ran_below_power_limit(*m, gpu)) capped.push_back(m);
    }
    if (capped.empty()) return;
    throw InputError(
        capped.front()->origin +
        (capped.size() > 1 ? " and " + std::to_string(capped.size() - 1) + " more GEMM points" : " (a GEMM point)") +
        " ran below " + gpu.name + "'s power limit (" + model::format_number("%g", gpu.power_limit_W) +
        " W), which only the power curve's fit reads, and it needs one shape timed at four points or "
        "more whose median powers differ by 10%; add them or drop the capped points");
  }
  if (!out.profile.power) {
    throw InputError(points.front()->origin + ": the GPU preset " + gpu.name +
                     " gives no board power, so its profile has no power curve to fit");
  }
  Curve curve;
  out.fits.push_back(measure<Curve>(
      "power_curve", points, [&](const std::vector<size_t>& index) { return best_curve(points, index); },
      [&](const Curve& c, size_t i) {
        // The point's time as the fitted clock at its power would give it (compute-bound: time ~ 1 / clock).
        return points[i]->median_s * clock_of(*points[i]) / c.clock_mhz(power_of(*points[i]));
      },
      &curve));
  out.profile.power->idle_W = curve.idle_W;
  out.profile.power->exponent = curve.exponent();
  const Measurement& shape = *points.front();
  out.power_curve_source = "fitted on " + std::to_string(points.size()) + " GEMMs of " + std::to_string(shape.m) +
                           " x " + std::to_string(shape.n) + " x " + std::to_string(shape.k) + " " + shape.dtype +
                           ": the median SM clock and power NVML read while each ran (P = idle_W + A f^exponent)";
}

}  // namespace tpsim::calibrate
