// GEMM tiling and wave quantisation, roofline regimes, transport step costs.
#include <catch2/catch.hpp>

#include "test_support.hpp"

using namespace tpsim;

TEST_CASE("GEMM waves quantise over the SM count") {
  const sim::CostModel cost = test::h100_cost();
  const int sms = cost.gpu().sm_count;  // 132
  // 128 x 256 tiles: M = 128 * 12, N = 256 * 11 gives exactly 132 tiles, one full wave.
  const model::GemmShape full{128 * 12, 256 * 11, 4096};
  const sim::GemmTiling one = cost.gemm_tiling(full);
  CHECK(one.tiles == sms);
  CHECK(one.waves == 1);
  CHECK(one.wave_efficiency == 1.0);
  // One more tile row needs a second wave that is almost empty.
  const sim::GemmTiling two = cost.gemm_tiling({128 * 13, 256 * 11, 4096});
  CHECK(two.waves == 2);
  CHECK(two.wave_efficiency == Approx(143.0 / 264.0));
  const double flops = 2.0 * full.m * full.n * full.k;
  const double expected =
      cost.profile().gemm.overhead_s + flops / (cost.gpu().peak_bf16_flops * cost.profile().gemm.efficiency);
  CHECK(cost.gemm_seconds(full, 0) == Approx(expected));
}

TEST_CASE("small-M GEMMs are memory-bound and split K to fill the SMs") {
  const sim::CostModel cost = test::h100_cost();
  const model::GemmShape decode{1, 12288, 5376};
  const sim::GemmTiling t = cost.gemm_tiling(decode);
  CHECK(t.tiles == 48);  // 64 x 256 tiles over N = 12288
  CHECK(t.splits == 2);  // floor(132 / 48) = 2 <= K / 1024
  const double weight_bytes = 2.0 * 12288 * 5376;
  const double expected =
      cost.profile().gemm.overhead_s + weight_bytes / (cost.gpu().hbm_Bps * cost.profile().gemm.hbm_efficiency);
  CHECK(cost.gemm_seconds(decode, weight_bytes) == Approx(expected));
}

TEST_CASE("chunked GEMMs run below the efficiency of the whole GEMM") {
  const sim::CostModel cost = test::h100_cost();
  const model::GemmShape whole{65536, 768, 4096};
  const model::GemmShape piece{8192, 768, 4096};
  const double whole_rate = 2.0 * whole.m * whole.n * whole.k / cost.gemm_seconds(whole, 0);
  const double piece_rate = 2.0 * piece.m * piece.n * piece.k / cost.gemm_seconds(piece, 0);
  CHECK(piece_rate < 0.9 * whole_rate);
}

TEST_CASE("the fitted H100 profile predicts the public GEMM table within 7 percent") {
  const sim::CostModel cost = test::h100_cost();
  struct Row {
    int64_t m, n, k;
    double tflops;
  };
  // gemm_h100_bf16.csv (calibrate/data/public), the rows the profile was fitted on.
  for (const Row& r : {Row{4096, 4096, 4096, 788.72}, Row{8192, 8192, 8192, 797.51}, Row{128, 12288, 5376, 352.56},
                       Row{16, 12288, 5376, 46.54}}) {
    const double flops = 2.0 * r.m * r.n * r.k;
    const double bytes = 2.0 * (r.m * r.k + r.k * r.n + r.m * r.n);
    const double predicted_tflops = flops / cost.gemm_seconds({r.m, r.n, r.k}, bytes) / 1e12;
    INFO("M=" << r.m << " N=" << r.n << " K=" << r.k);
    CHECK(predicted_tflops == Approx(r.tflops).epsilon(0.07));
  }
}

TEST_CASE("an SM comm kernel leaves the GPU the SMs it does not take") {
  const sim::CostModel cost = test::h100_cost();
  const double sms = cost.gpu().sm_count;
  const double taken = cost.profile().nccl_sms;
  CHECK(cost.compute_share_during_comm(0) == 1.0);
  CHECK(cost.compute_share_during_comm(1) == Approx((sms - taken) / sms));
  CHECK(cost.compute_share_during_comm(2) == Approx((sms - 2 * taken) / sms));
}
