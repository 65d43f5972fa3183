// The tail a GEMM pays beside a partner holding SMs, fitted on our H200 overlap points.
#include <catch2/catch.hpp>

#include <filesystem>

#include "calibrate/fits/shared_tail_fit.hpp"
#include "test_support.hpp"

using namespace tpsim;

namespace {

// Our H200 points: a GEMM launched after a copy kernel of 4-132 blocks took its SMs.
std::vector<calibrate::Measurement> h200_partner_first_points() {
  std::vector<calibrate::Measurement> all;
  const std::filesystem::path dir =
      std::filesystem::path(TPSIM_SOURCE_DIR) / "real/results/h200-2026-12-04/overlap_partner_first";
  for (const int blocks : {4, 8, 16, 32, 64, 132}) {
    const auto points = calibrate::read_measurements(
        (dir / ("overlap_partner_first_blocks" + std::to_string(blocks) + ".jsonl")).string());
    all.insert(all.end(), points.begin(), points.end());
  }
  return all;
}

}  // namespace

TEST_CASE("the shared-SM tail refits on our H200 points to the value the profiles carry, within 8% of each") {
  const std::vector<calibrate::Measurement> all = h200_partner_first_points();
  std::vector<const calibrate::Measurement*> points;
  for (const auto& m : all) {
    if (calibrate::is_partner_first_copy_kernel(m)) points.push_back(&m);
  }
  REQUIRE(points.size() == 24);  // four GEMM shapes x six block counts
  calibrate::ComponentFit fit;
  const sim::CostProfile profile = test::profile_preset("h200-sxm");
  const double tail = calibrate::fit_shared_tail(points, test::gpu_preset("h200-sxm"), profile, fit);
  CHECK(tail == Approx(calibrate::kH200SharedTailTiles).margin(1e-9));
  CHECK(fit.max_abs_error_pct < 8.0);
  CHECK(fit.errors.size() == 24);
}

TEST_CASE("a partner holding every SM is waited for: the GEMM's time is the partner's then its own, no tail") {
  calibrate::Measurement m;
  m.kind = "overlap";
  m.pattern = "copy_kernel";
  m.m = m.n = m.k = 8192;
  m.gemm_alone_s = 1.0e-3;
  m.partner_alone_s = 0.5e-3;
  m.gemm_overlapped_s = 1.5e-3;
  m.details = {{"blocks", 132}, {"partner_first", true}};
  REQUIRE(calibrate::is_partner_first_copy_kernel(m));
  const sim::GpuSpec gpu = test::gpu_preset("h200-sxm");
  CHECK(calibrate::predicted_shared_slowdown(m, 2.0, gpu, test::profile_preset("h200-sxm")) == Approx(1.5));
  // 33 of 132 blocks held past the GEMM's end: 3/4 of its rate, then 2 of its 16 waves' tile times.
  m.details["blocks"] = 33;
  m.partner_alone_s = 1.0;
  CHECK(calibrate::predicted_shared_slowdown(m, 2.0, gpu, test::profile_preset("h200-sxm")) ==
        Approx(1.0 / 0.75 + 2.0 / 16));
}
