// GEMMs beside one-way peer copies fit the energy per transferred bit (power.transfer_pJ_per_bit).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "calibrate/fits/transfer_energy_fit.hpp"
#include "calibrate/profile/profile_fit.hpp"
#include "calibrate/validation/composite_model.hpp"
#include "composite_points.hpp"
#include "input/profile/profile_writer.hpp"
#include "sim/cost/collective_time.hpp"
#include "test_support.hpp"

using namespace tpsim;
using calibrate::Measurement;

namespace {

// Overlap points whose overlapped GEMM times a GPU drawing `pj_per_bit` per copied bit would show.
std::vector<Measurement> copy_overlaps(const sim::GpuSpec& gpu, const sim::CostProfile& truth) {
  std::vector<Measurement> points;
  for (double gemm_ms : {2.0, 5.0}) {
    for (double copy_ms : {1.0, 8.0}) {
      Measurement m = test::composite("overlap", "memcpy_peer", 8192, 8192, 8192, 2);
      m.bytes = 3.6e8 * copy_ms;  // 360 GB/s one way
      m.gemm_alone_s = gemm_ms * 1e-3;
      m.partner_alone_s = copy_ms * 1e-3;
      m.gemm_overlapped_s = calibrate::gemm_beside_copy_seconds(gpu, truth, m.gemm_alone_s, m.partner_alone_s, m.bytes);
      m.median_s = m.p10_s = m.p90_s = std::max(m.gemm_overlapped_s, m.partner_alone_s);
      m.baseline_s = m.gemm_alone_s + m.partner_alone_s;
      m.origin = "copy" + std::to_string(points.size());
      points.push_back(m);
    }
  }
  return points;
}

}  // namespace

TEST_CASE(
    "a GEMM beside a shorter copy loses the clock for the copy's span only, and beside a longer one, throughout") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  sim::CostProfile profile = test::profile_preset("h100-sxm");
  profile.power = sim::PowerParams{700, 70, 3, 20};
  // 360 GB/s one way at 20 pJ/bit: 57.6 W off the SMs' 630 W of dynamic power at 700 W.
  const double clock = std::cbrt((630.0 - 57.6) / 630.0);
  CHECK(calibrate::gemm_beside_copy_seconds(gpu, profile, 5e-3, 1e-3, 3.6e8) == Approx(5e-3 + 1e-3 * (1 - clock)));
  CHECK(calibrate::gemm_beside_copy_seconds(gpu, profile, 2e-3, 8e-3, 2.88e9) == Approx(2e-3 / clock));
}

TEST_CASE("GEMMs beside peer copies give back the energy per bit they were made with") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  sim::CostProfile truth = test::profile_preset("h100-sxm");
  REQUIRE(truth.power);
  truth.power->transfer_pJ_per_bit = 17.5;
  const sim::CostProfile base = test::profile_preset("h100-sxm");
  const calibrate::ProfileFit fit = calibrate::fit_profile(copy_overlaps(gpu, truth), gpu, &base, "h100");
  CHECK(fit.profile.power->transfer_pJ_per_bit == Approx(17.5).margin(0.05));
  const std::string yaml = sim::profile_yaml(calibrate::profile_record(fit, "h100-sxm", {"overlap.jsonl"}));
  CHECK_THAT(yaml, Catch::Contains("transfer_pJ_per_bit_source: \"fitted on 4 GEMMs beside one-way peer copies"));
  CHECK_THAT(yaml, Catch::Contains("held_out_max_abs_error_pct: 0.0"));
}

TEST_CASE("one GEMM beside a copy fits no energy: it says so, naming what would") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const sim::CostProfile base = test::profile_preset("h100-sxm");
  std::vector<Measurement> one = copy_overlaps(gpu, base);
  one.resize(1);
  CHECK_THROWS_WITH(calibrate::fit_profile(one, gpu, &base, "h100"),
                    Catch::Contains("calibrate nothing") && Catch::Contains("beside peer copies (two at least)"));
}

TEST_CASE("validate simulates a GEMM beside a peer copy as real/ runs it: one copy, one way, at the one-pair rate") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const sim::CostModel cost = test::h100_cost();
  REQUIRE(cost.profile().power);
  REQUIRE(cost.profile().power->transfer_pJ_per_bit > 0);
  Measurement m = test::composite("overlap", "memcpy_peer", 8192, 8192, 8192, 2);
  m.bytes = 2.0e9;  // outlasts the GEMM
  const calibrate::CompositePrediction p =
      calibrate::predict_composite(m, cost, calibrate::composite_engine_options(cost.profile()));
  // The copy alone: one step at the one-pair efficiency, not the all-ranks one.
  CHECK(p.partner_alone_s == Approx(sim::step_seconds(cost.profile().copy_engine, m.bytes, cost.port_Bps())));
  // The GEMM loses the clock one direction's draw costs, as calibrate's closed form says; the engine rounds
  // the draw to its power levels (at most the port's full draw / 128, under 0.7 W of the 630 W the SMs
  // draw, a clock change under 0.04% through the cube root), so 0.2% bounds the difference.
  CHECK(p.gemm_overlapped_s ==
        Approx(calibrate::gemm_beside_copy_seconds(gpu, cost.profile(), p.gemm_alone_s, p.partner_alone_s, m.bytes))
            .epsilon(2e-3));
  CHECK(p.gemm_overlapped_s > p.gemm_alone_s * 1.01);
}
