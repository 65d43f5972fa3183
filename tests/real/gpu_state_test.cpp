// NVML's view of the GPUs with each point: the summary, the record fields, and what happens without NVML.
#include <catch2/catch.hpp>

#include "base/input_error.hpp"
#include "base/measurement.hpp"
#include "real/core/gpu_state_sampler.hpp"
#include "real/core/points.hpp"

using namespace tpsim::real;
using tpsim::calibrate::GpuState;
using tpsim::calibrate::Measurement;

namespace {

Measurement gemm_with(const GpuState& state) {
  PointContext c{"h200-sxm", nlohmann::ordered_json::object(), summarize({1e-3}), 1, 0, true, state, std::nullopt};
  return gemm_point(c, GemmCase{64, 64, 64, 1, ""}, "bf16");
}

const std::string kLine = R"({"kind":"gemm","gpu":"h200-sxm","m":64,"n":64,"k":64,"median_s":1e-3)";

}  // namespace

TEST_CASE(
    "readings summarise to the smallest, median and largest clock, power and temperature, and the largest enforced "
    "power limit",
    "[real][gpu_state]") {
  const GpuState g = summarize_gpu_state({{1980, 650, 60, 700}, {1755, 700, 64, 700}, {1830, 690, 62, 0}}, "");
  CHECK(g.power_limit_W == 700);
  CHECK(g.recorded);
  CHECK(g.readings == 3);
  CHECK(g.sm_clock_mhz.min == 1755);
  CHECK(g.sm_clock_mhz.median == 1830);
  CHECK(g.sm_clock_mhz.max == 1980);
  CHECK(g.power_W.median == 690);
  CHECK(g.temperature_C.max == 64);
  const GpuState none = summarize_gpu_state({}, "NVML not loaded (x)");
  CHECK_FALSE(none.recorded);
  CHECK(none.why_not == "NVML not loaded (x)");
}

TEST_CASE("without NVML a point's GPU state is not recorded, with the reason, and nothing fails", "[real][gpu_state]") {
  const NvmlReader missing("libtpsim-no-such-nvml.so.1");
  CHECK_FALSE(missing.available());
  CHECK_THAT(missing.why_not(), Catch::StartsWith("NVML not loaded ("));
  std::string why;
  CHECK_FALSE(missing.read("0000:3b:00.0", &why));
  CHECK(why == missing.why_not());
  GpuStateSampler sampler(missing, {"0000:3b:00.0"}, 0.001);
  const GpuState g = sampler.finish();
  CHECK_FALSE(g.recorded);
  CHECK(g.why_not == missing.why_not());
  // The process's own reader loads or says why not; either way it answers.
  const NvmlReader& system = system_nvml();
  CHECK(system.available() == system.why_not().empty());
}

TEST_CASE("a point's GPU state is written with it and read back, and files without one still read",
          "[real][gpu_state]") {
  const GpuState recorded = summarize_gpu_state({{1980, 650, 60}, {1755, 700, 64}}, "");
  const Measurement back =
      tpsim::calibrate::parse_measurement(tpsim::calibrate::to_json(gemm_with(recorded)).dump(), "t:1");
  CHECK(back.gpu_state.recorded);
  CHECK(back.gpu_state.readings == 2);
  CHECK(back.gpu_state.sm_clock_mhz.min == 1755);
  CHECK(back.gpu_state.power_W.max == 700);
  CHECK(back.gpu_state.temperature_C.median == Approx(62));
  CHECK(back.gpu_state.power_limit_W == 0);  // not read: not written
  GpuState capped = recorded;
  capped.power_limit_W = 500;
  const nlohmann::ordered_json limited = tpsim::calibrate::to_json(gemm_with(capped));
  CHECK(limited["gpu_state"]["power_limit_W"] == 500);
  CHECK(tpsim::calibrate::parse_measurement(limited.dump(), "t:4").gpu_state.power_limit_W == 500);

  GpuState absent;
  absent.why_not = "NVML not loaded (libnvidia-ml.so.1: cannot open shared object file)";
  const nlohmann::ordered_json j = tpsim::calibrate::to_json(gemm_with(absent));
  CHECK(j["gpu_state"]["recorded"] == false);
  const Measurement absent_back = tpsim::calibrate::parse_measurement(j.dump(), "t:2");
  CHECK_FALSE(absent_back.gpu_state.recorded);
  CHECK(absent_back.gpu_state.why_not == absent.why_not);

  const Measurement older = tpsim::calibrate::parse_measurement(kLine + "}", "t:3");
  CHECK_FALSE(older.gpu_state.recorded);
  CHECK(older.gpu_state.why_not.empty());
  CHECK_FALSE(tpsim::calibrate::to_json(older).contains("gpu_state"));
}

TEST_CASE("a malformed GPU state is refused by name", "[real][gpu_state]") {
  CHECK_THROWS_WITH(
      tpsim::calibrate::parse_measurement(kLine + R"(,"gpu_state":{"recorded":true,"readings":0}})", "f:7"),
      "f:7: \"gpu_state.readings\" must be an integer from 1 to 2^30, got 0");
  const std::string spread = R"({"min":1900,"median":1800,"max":1980})";
  CHECK_THROWS_WITH(tpsim::calibrate::parse_measurement(
                        kLine + R"(,"gpu_state":{"recorded":true,"readings":2,"sm_clock_mhz":)" + spread + "}}", "f:8"),
                    "f:8: \"gpu_state.sm_clock_mhz\" needs min <= median <= max");
  const std::string full = R"({"min":1755,"median":1800,"max":1980})";
  const std::string state = R"(,"gpu_state":{"recorded":true,"readings":2,"sm_clock_mhz":)" + full + R"(,"power_W":)" +
                            full + R"(,"temperature_C":)" + full;
  CHECK_THROWS_WITH(tpsim::calibrate::parse_measurement(kLine + state + R"(,"power_limit_W":-5}})", "f:9"),
                    "f:9: \"gpu_state.power_limit_W\" must be a power in W above 0 and at most 10000, got -5");
}
