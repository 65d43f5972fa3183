// One GEMM shape timed under several power limits, with NVML's clock and power readings, fits the power curve
// (power.idle_W, power.exponent); capped points stay out of the compute-rate fit.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "base/input_error.hpp"
#include "base/measurement.hpp"
#include "calibrate/fits/power_curve_fit.hpp"
#include "calibrate/profile/profile_fit.hpp"
#include "input/profile/profile_reader.hpp"
#include "input/profile/profile_writer.hpp"
#include "test_support.hpp"

using namespace tpsim;
using calibrate::Measurement;

namespace {

const std::string kMeasurements = std::string(TPSIM_SOURCE_DIR) + "/calibrate/data/measurements/";

// A compute-bound 8192^3 bf16 GEMM on a GPU whose power follows P = idle + A f^exponent: at each limit it runs
// at the clock where the curve meets the limit (1755 MHz at 700 W), its time inversely to the clock.
struct Curve {
  double idle_W, exponent;
  double clock_mhz(double power_W) const {
    return 1755.0 * std::pow((power_W - idle_W) / (700.0 - idle_W), 1.0 / exponent);
  }
};

Measurement capped_gemm(const Curve& curve, double limit_W, int line) {
  Measurement m;
  m.kind = "gemm";
  m.gpu = "h100-sxm";
  m.m = m.n = m.k = 8192;
  const double clock = curve.clock_mhz(limit_W);
  m.median_s = m.p10_s = m.p90_s = 1.4e-3 * 1755.0 / clock;
  m.gpu_state.recorded = true;
  m.gpu_state.readings = 20;
  m.gpu_state.sm_clock_mhz = {clock, clock, clock};
  m.gpu_state.power_W = {limit_W, limit_W, limit_W};
  m.gpu_state.temperature_C = {60, 62, 64};
  m.gpu_state.power_limit_W = limit_W;
  m.origin = "sweep.jsonl:" + std::to_string(line);
  return m;
}

// The sweep at `limits`, after the public H100 GEMM table (timed at 700 W, without readings) that the compute
// rate's fit needs.
std::vector<Measurement> sweep(const Curve& curve, const std::vector<double>& limits) {
  std::vector<Measurement> points;
  for (double limit : limits) points.push_back(capped_gemm(curve, limit, static_cast<int>(points.size()) + 1));
  for (const Measurement& m : calibrate::read_measurements(kMeasurements + "gemm_h100_bf16.jsonl")) points.push_back(m);
  return points;
}

}  // namespace

TEST_CASE(
    "one GEMM shape timed under several power limits gives back the idle power and exponent its clocks followed, "
    "and only the point at the GPU's own limit fits its compute rate",
    "[calibrate][power]") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const Curve truth{110.0, 2.4};
  const calibrate::ProfileFit fit = calibrate::fit_profile(sweep(truth, {700, 600, 500, 400, 300}), gpu);
  REQUIRE(fit.profile.power);
  CHECK(fit.profile.power->idle_W == Approx(110.0).margin(0.5));
  CHECK(fit.profile.power->exponent == Approx(2.4).epsilon(0.02));
  const auto fitted =
      std::find_if(fit.fits.begin(), fit.fits.end(), [](const auto& c) { return c.name == "power_curve"; });
  REQUIRE(fitted != fit.fits.end());
  CHECK(fitted->errors.size() == 5);
  CHECK(fitted->max_abs_error_pct < 0.5);
  const auto gemm = std::find_if(fit.fits.begin(), fit.fits.end(), [](const auto& c) { return c.name == "gemm"; });
  REQUIRE(gemm != fit.fits.end());
  // The 700 W point and the public table's; the capped ones tell the curve only.
  std::vector<std::string> origins;
  for (const auto& e : gemm->errors) origins.push_back(e.origin);
  CHECK(std::count(origins.begin(), origins.end(), "sweep.jsonl:1") == 1);
  for (const char* capped : {"sweep.jsonl:2", "sweep.jsonl:3", "sweep.jsonl:4", "sweep.jsonl:5"}) {
    CHECK(std::count(origins.begin(), origins.end(), capped) == 0);
  }
  const std::string yaml = sim::profile_yaml(calibrate::profile_record(fit, "h100-sxm", {"sweep.jsonl"}));
  CHECK_THAT(yaml, Catch::Contains("idle_W_source: \"fitted on 5 GEMMs of 8192 x 8192 x 8192 bf16"));
  CHECK_THAT(yaml, Catch::Contains("curve_fit:\n    values: [idle_W, exponent]"));
  // The profile reads back with the fitted curve: at 500 W its clock derate is the curve's.
  const sim::CostProfile back = sim::parse_profile(yaml, "fitted.yaml");
  REQUIRE(back.power);
  const double ratio = std::pow((500 - back.power->idle_W) / (700 - back.power->idle_W), 1 / back.power->exponent);
  CHECK(ratio == Approx(truth.clock_mhz(500) / truth.clock_mhz(700)).epsilon(0.003));
}

TEST_CASE("GEMM points without clock and power readings leave the assumed power curve", "[calibrate][power]") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  std::vector<Measurement> points = sweep(Curve{110.0, 2.4}, {700, 600, 500, 400});
  for (Measurement& m : points) m.gpu_state = {};
  const calibrate::ProfileFit fit = calibrate::fit_profile(points, gpu);
  REQUIRE(fit.profile.power);
  CHECK(fit.profile.power->idle_W == Approx(70.0));  // a tenth of the 700 W board
  CHECK(fit.profile.power->exponent == 3.0);
  CHECK(fit.power_curve_source.empty());
}

TEST_CASE(
    "GEMMs capped below the GPU's power limit without a shape to fit the curve on are refused, saying what is "
    "missing",
    "[calibrate][power]") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  CHECK_THROWS_WITH(calibrate::fit_profile(sweep(Curve{110.0, 2.4}, {700, 500, 400}), gpu),
                    Catch::Contains("sweep.jsonl:2 and 1 more GEMM points ran below h100-sxm's power limit (700 W)") &&
                        Catch::Contains("four points"));
}

TEST_CASE("readings whose clocks do not follow their power draw are refused, naming the points", "[calibrate][power]") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  std::vector<Measurement> points = sweep(Curve{110.0, 2.4}, {700, 600, 500, 400});
  // The clocks run backwards: the lowest limit at the highest clock.
  for (size_t i = 0; i < points.size(); ++i) {
    const double clock = 1400.0 + 100.0 * static_cast<double>(i);
    points[i].gpu_state.sm_clock_mhz = {clock, clock, clock};
  }
  CHECK_THROWS_WITH(calibrate::fit_profile(points, gpu),
                    Catch::Contains("sweep.jsonl:1, sweep.jsonl:2, sweep.jsonl:3 and 1 more: the power_curve fit") &&
                        Catch::Contains("do not rise with the power"));
}
