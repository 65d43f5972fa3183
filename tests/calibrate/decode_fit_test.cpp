// Decode measurements (kind "decode"): read and refused line by line; the fit recovers the memory-bound
// regime that generated its points, refuses points that cannot separate it, and gives the shipped A100
// profile from gpt-fast's published runs.
#include <catch2/catch.hpp>
#include <cmath>

#include "base/input_error.hpp"
#include "base/measurement.hpp"
#include "calibrate/fits/decode_fit.hpp"
#include "calibrate/profile/profile_fit.hpp"
#include "calibrate/profile/profile_transfer.hpp"
#include "test_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

const std::string kMeasurements = std::string(TPSIM_SOURCE_DIR) + "/calibrate/data/measurements/";

std::string decode_line(const std::string& fields) {
  return R"({"kind":"decode","gpu":"a100-sxm","median_s":0.5,)" + fields + "}";
}

calibrate::Measurement decode_point(const std::string& model, int ranks, const std::string& origin) {
  calibrate::Measurement m =
      calibrate::parse_measurement(decode_line(R"("model":")" + model + R"(","ranks":)" + std::to_string(ranks) +
                                               R"(,"batch":1,"context_len":16,"gen_len":8,"collective":"one_shot")"),
                                   origin);
  return m;
}

// The a100-sxm default profile with the memory-bound regime set to `overhead_s` and `efficiency`.
sim::CostProfile a100_with(double overhead_s, double efficiency) {
  sim::CostProfile p = test::profile_preset("a100-sxm");
  p.gemm.overhead_s = p.memory.overhead_s = overhead_s;
  p.gemm.hbm_efficiency = p.memory.hbm_efficiency = efficiency;
  return p;
}

}  // namespace

TEST_CASE("a decode measurement reads back with its run's settings, and a bad field is refused by name") {
  const calibrate::Measurement m = calibrate::parse_measurement(
      decode_line(R"("model":"llama-2-7b","ranks":2,"batch":1,"context_len":5,"gen_len":200,)"
                  R"("implementation":"gpt-fast","collective":"one_shot","power_limit_W":330)"),
      "d.jsonl:1");
  CHECK(m.model == "llama-2-7b");
  CHECK(m.ranks == 2);
  CHECK(m.gen_len == 200);
  CHECK(m.implementation == "gpt-fast");
  CHECK(m.cuda_graphs);
  CHECK(m.topology == "nvswitch");
  CHECK(m.tokens_per_s() == Approx(200 / 0.5));
  const calibrate::Measurement again = calibrate::parse_measurement(calibrate::to_json(m).dump(), "d.jsonl:2");
  CHECK(again.power_limit_W == 330);
  CHECK(again.collective == "one_shot");
  const std::string base = R"("ranks":2,"batch":1,"context_len":5,"gen_len":200)";
  CHECK_THROWS_WITH(
      calibrate::parse_measurement(decode_line(R"("model":"x}\nhardware: {")" + std::string(",") + base), "d.jsonl:3"),
      Contains("d.jsonl:3") && Contains("\"model\" must name a preset"));
  CHECK_THROWS_WITH(calibrate::parse_measurement(decode_line(R"("model":"llama-2-7b","ranks":0,"batch":1,)"
                                                             R"("context_len":5,"gen_len":200)"),
                                                 "d.jsonl:4"),
                    Contains("d.jsonl:4") && Contains("\"ranks\""));
  CHECK_THROWS_WITH(calibrate::parse_measurement(
                        decode_line(R"("model":"llama-2-7b",)" + base + R"(,"collective":"ring")"), "d.jsonl:5"),
                    Contains("\"collective\" must be one of nccl, one_shot, two_shot, auto"));
  CHECK_THROWS_WITH(calibrate::parse_measurement(
                        decode_line(R"("model":"llama-2-7b",)" + base + R"(,"cuda_graphs":"yes")"), "d.jsonl:6"),
                    Contains("\"cuda_graphs\" must be true or false"));
  // An unknown model is found where the run is simulated, located at its line.
  CHECK_THROWS_WITH(calibrate::decode_scenario(decode_point("llama-9", 1, "d.jsonl:7")),
                    Contains("d.jsonl:7: this decode run cannot be simulated") && Contains("unknown model preset"));
}

TEST_CASE("the decode fit recovers the per-kernel time and streaming efficiency its points were simulated with") {
  const sim::CostProfile truth = a100_with(3e-6, 0.75);
  std::vector<calibrate::Measurement> points;
  int line = 0;
  for (const auto& [model, ranks] : std::vector<std::pair<std::string, int>>{
           {"qwen3-0.6b", 1}, {"qwen3-0.6b", 2}, {"danube3-500m", 1}, {"danube3-500m", 4}}) {
    calibrate::Measurement m = decode_point(model, ranks, "d.jsonl:" + std::to_string(++line));
    m.median_s = m.p10_s = m.p90_s = calibrate::predict_decode_seconds(m, truth);
    points.push_back(m);
  }
  std::vector<const calibrate::Measurement*> refs;
  for (const calibrate::Measurement& m : points) refs.push_back(&m);
  calibrate::ProfileFit fit;
  fit.profile = a100_with(1e-6, 0.9);  // where the fit starts: the values it replaces
  calibrate::fit_decode(refs, fit);
  CHECK(fit.profile.gemm.overhead_s == Approx(3e-6).epsilon(1e-6));
  CHECK(fit.profile.memory.overhead_s == Approx(3e-6).epsilon(1e-6));
  CHECK(fit.profile.gemm.hbm_efficiency == Approx(0.75).epsilon(1e-6));
  CHECK(fit.profile.memory.hbm_efficiency == Approx(0.75).epsilon(1e-6));
  REQUIRE(fit.fits.size() == 1);
  CHECK(fit.fits[0].name == "decode");
  CHECK(fit.fits[0].max_abs_error_pct < 1e-4);
  CHECK(fit.fits[0].held_out_max_abs_error_pct < 1e-4);  // four points: fitted on two, checked on two
}

TEST_CASE("decode points that cannot separate the two values, or imply an efficiency above one, are refused") {
  const calibrate::Measurement a = decode_point("qwen3-0.6b", 1, "d.jsonl:1");
  const calibrate::Measurement b = decode_point("qwen3-0.6b", 1, "d.jsonl:2");
  calibrate::ProfileFit fit;
  fit.profile = a100_with(1e-6, 0.9);
  CHECK_THROWS_WITH(calibrate::fit_decode({&a, &b}, fit), Contains("cannot tell the per-kernel time"));
  CHECK_THROWS_WITH(calibrate::fit_decode({&a}, fit), Contains("two runs or more"));
  // Runs far faster than streaming the weights at the HBM bandwidth allows.
  calibrate::Measurement fast_a = decode_point("qwen3-0.6b", 1, "d.jsonl:3");
  calibrate::Measurement fast_b = decode_point("danube3-500m", 2, "d.jsonl:4");
  fast_a.median_s = fast_a.p10_s = fast_a.p90_s = 1e-5;
  fast_b.median_s = fast_b.p10_s = fast_b.p90_s = 1e-5;
  CHECK_THROWS_WITH(calibrate::fit_decode({&fast_a, &fast_b}, fit),
                    Contains("d.jsonl:3 .. d.jsonl:4") && (Contains("above 1") || Contains("outside [0, 1 s]")));
}

TEST_CASE("the shipped A100 profile's memory-bound regime is the decode fit of gpt-fast's published runs") {
  // The transfer of the H100 fit, then the decode fit, as tools/refit_profiles.sh runs them.
  std::vector<calibrate::Measurement> h100;
  for (const char* file : {"gemm_h100_bf16.jsonl", "collectives_h100_latency.jsonl", "small_allreduce_h100.jsonl",
                           "p2p_bandwidth.jsonl", "allreduce_multinode_busbw.jsonl", "async_tp_trace_pulls.jsonl"}) {
    const auto some = calibrate::read_measurements(kMeasurements + file);
    h100.insert(h100.end(), some.begin(), some.end());
  }
  calibrate::ProfileFit fit = calibrate::fit_profile(h100, test::gpu_preset("h100-sxm"));
  calibrate::transfer_profile(fit, test::gpu_preset("h100-sxm"), test::gpu_preset("a100-sxm"));
  const auto decode = calibrate::read_measurements(kMeasurements + "decode_tp_gpt_fast.jsonl");
  REQUIRE(decode.size() == 7);
  std::vector<const calibrate::Measurement*> refs;
  for (const calibrate::Measurement& m : decode) refs.push_back(&m);
  calibrate::fit_decode(refs, fit);
  const sim::CostProfile shipped = test::profile_preset("a100-sxm");
  CHECK(shipped.memory.hbm_efficiency == Approx(fit.profile.memory.hbm_efficiency).epsilon(1e-5));
  CHECK(shipped.gemm.overhead_s == Approx(fit.profile.gemm.overhead_s).epsilon(1e-5));
  // gpt-fast's README puts the A100's peak bandwidth at 330 W at about 1700 GB/s; the fit streams at 1649.
  CHECK(fit.profile.memory.hbm_efficiency * 2039 == Approx(1649).epsilon(0.01));
  // The issue's target: every published run within 10%; the fit lands within 2%, held out too.
  CHECK(fit.fits.back().max_abs_error_pct < 2.0);
  CHECK(fit.fits.back().held_out_max_abs_error_pct < 2.0);
}
