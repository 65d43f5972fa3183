// Fitters recover known parameters, and the shipped default profiles equal the fit of the public data.
#include <catch2/catch.hpp>

#include "calibrate/csv_table.hpp"
#include "calibrate/public_profile.hpp"
#include "model/input_error.hpp"
#include "test_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

TEST_CASE("the ring fit recovers step latency and link efficiency from exact ring times") {
  const double link = 450e9, latency = 6e-6, efficiency = 0.7;
  std::vector<calibrate::RingSample> samples;
  for (double mib : {1.0, 4.0, 32.0, 256.0}) {
    const double bytes = mib * 1024 * 1024;
    samples.push_back({8, bytes, 7 * (latency + bytes / (8 * link * efficiency))});
  }
  const calibrate::RingFit fit = calibrate::fit_ring(samples, link);
  CHECK(fit.params.step_latency_s == Approx(latency).epsilon(1e-9));
  CHECK(fit.params.link_efficiency == Approx(efficiency).epsilon(1e-9));
  CHECK(fit.max_abs_error_pct < 1e-6);
}

TEST_CASE("the GEMM fit recovers efficiency, HBM efficiency and overhead from model-generated times") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  sim::CostProfile truth;
  truth.gemm.efficiency = 0.72;
  truth.gemm.hbm_efficiency = 0.8;
  truth.gemm.overhead_s = 3e-6;
  const sim::CostModel cost(gpu, truth);
  std::vector<calibrate::GemmSample> samples;
  for (const model::GemmShape& s : std::vector<model::GemmShape>{
           {1024, 1024, 1024}, {4096, 4096, 4096}, {8192, 8192, 8192}, {1, 12288, 5376}, {16, 12288, 5376}}) {
    const double bytes = 2.0 * (s.m * s.k + s.k * s.n + s.m * s.n);
    samples.push_back({s, cost.gemm_seconds(s, bytes)});
  }
  const calibrate::GemmFit fit = calibrate::fit_gemm(samples, gpu, sim::GemmParams{});
  CHECK(fit.params.efficiency == Approx(0.72).epsilon(1e-3));
  CHECK(fit.params.hbm_efficiency == Approx(0.8).epsilon(1e-3));
  CHECK(fit.params.overhead_s == Approx(3e-6).epsilon(1e-2));
  CHECK(fit.max_abs_error_pct < 0.5);
}

TEST_CASE("the shipped h100-sxm profile is the fit of the public data, not typed-in numbers") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const calibrate::PublicFit fit =
      calibrate::fit_public_profile(std::string(TPSIM_SOURCE_DIR) + "/calibrate/data/public", gpu);
  const sim::CostProfile shipped = test::profile_preset("h100-sxm");
  CHECK(shipped.gemm.efficiency == Approx(fit.profile.gemm.efficiency).epsilon(1e-5));
  CHECK(shipped.gemm.hbm_efficiency == Approx(fit.profile.gemm.hbm_efficiency).epsilon(1e-5));
  CHECK(shipped.gemm.overhead_s == Approx(fit.profile.gemm.overhead_s).epsilon(1e-5));
  CHECK(shipped.nccl.step_latency_s == Approx(fit.profile.nccl.step_latency_s).epsilon(1e-5));
  CHECK(shipped.nccl.link_efficiency == Approx(fit.profile.nccl.link_efficiency).epsilon(1e-5));
  CHECK(shipped.copy_engine.link_efficiency == Approx(380.0 / 450.0).epsilon(1e-5));
  // Fit quality stays what the docs state.
  CHECK(fit.gemm.max_abs_error_pct < 7.0);
  CHECK(fit.nccl.max_abs_error_pct < 25.0);
}

TEST_CASE("a malformed CSV table is rejected with its file and line") {
  CHECK_THROWS_WITH(calibrate::CsvTable::parse("m,n\n1,2\n3\n", "t.csv"), Contains("t.csv:3") && Contains("1 fields"));
  const calibrate::CsvTable table = calibrate::CsvTable::parse("m,note\n\"1\",\"a, b\"\nx,y\n", "t.csv");
  CHECK(table.at(0, "note") == "a, b");
  CHECK(table.number(0, "m") == 1.0);
  CHECK_THROWS_WITH(table.number(1, "m"), Contains("t.csv:3") && Contains("not a number"));
}
