// Transfers draw power: beside a compute-bound kernel at the power limit, the SM clock falls by what they take.
#include <catch2/catch.hpp>
#include <cmath>

#include "input/profile/profile_reader.hpp"
#include "model/graph/program_builder.hpp"
#include "sim/cost/power_limit.hpp"
#include "sim/engine/isolated_run.hpp"
#include "test_support.hpp"

using namespace tpsim;

namespace {

// H100 SXM with the curve {measured 700 W, idle 70 W, exponent 3} and `pj_per_bit` per transferred bit.
sim::CostProfile profile_with_energy(double pj_per_bit) {
  sim::CostProfile p = test::profile_preset("h100-sxm");
  p.power = sim::PowerParams{700, 70, 3, pj_per_bit};
  return p;
}

}  // namespace

TEST_CASE("a transfer draws its bits times the profile's energy per bit") {
  // 100 GB/s = 8e11 bit/s, at 10 pJ each: 8 W.
  CHECK(sim::transfer_power_W(profile_with_energy(10), 100e9) == Approx(8.0));
  CHECK(sim::transfer_power_W(profile_with_energy(0), 100e9) == 0.0);
}

TEST_CASE("beside transfers the clock falls to where the power curve meets the limit less their draw") {
  sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const sim::CostProfile profile = profile_with_energy(10);
  SECTION("at the measured power: the draw comes straight out of the SMs' dynamic power") {
    gpu.power_limit_W = 700;
    CHECK(sim::clock_factor_beside_transfers(gpu, profile, 50) == Approx(std::cbrt((700.0 - 50 - 70) / 630.0)));
  }
  SECTION("under a lower limit: relative to the clock that limit allows alone") {
    gpu.power_limit_W = 500;
    CHECK(sim::clock_factor_beside_transfers(gpu, profile, 50) ==
          Approx(std::cbrt((500.0 - 50 - 70) / 630.0) / std::cbrt((500.0 - 70) / 630.0)));
  }
  SECTION("on a windowed profile's curve the same: a kernel beside the transfers for the whole window") {
    sim::CostProfile windowed = profile;
    windowed.power->sustained_ratio = 0.85;
    gpu.power_limit_W = 500;
    CHECK(sim::clock_factor_beside_transfers(gpu, windowed, 50) ==
          Approx(std::cbrt((500.0 - 50 - 70) / 630.0) / std::cbrt((500.0 - 70) / 630.0)));
  }
  SECTION("without a draw, or without a power section, the clock stands") {
    CHECK(sim::clock_factor_beside_transfers(gpu, profile, 0) == 1.0);
    sim::CostProfile none = profile;
    none.power.reset();
    CHECK(sim::clock_factor_beside_transfers(gpu, none, 50) == 1.0);
  }
}

TEST_CASE("a limit above the profile's measured power absorbs a draw up to the headroom") {
  sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  gpu.power_limit_W = 700;
  sim::CostProfile profile = profile_with_energy(10);
  profile.power->measured_at_W = 500;  // 200 W of headroom at 700 W
  CHECK(sim::clock_factor_beside_transfers(gpu, profile, 150) == 1.0);
  CHECK(sim::clock_factor_beside_transfers(gpu, profile, 250) == Approx(std::cbrt((700.0 - 250 - 70) / 430.0)));
}

TEST_CASE("a GEMM beside copy-engine pulls runs at the clock their draw leaves while they move data") {
  const double pj_per_bit = 20, efficiency = 0.75;
  sim::CostProfile profile = profile_with_energy(pj_per_bit);
  profile.copy_engine = {5e-6, efficiency};
  profile.copy_engine_all_ranks_efficiency.reset();
  const sim::CostModel cost(test::gpu_preset("h100-sxm"), profile);
  model::LayerGraph graph(2);
  model::ProgramBuilder b(graph, 0.0);  // zero element bytes: the GEMM is compute-bound
  const model::OpId gemm = b.gemm("gemm", {8192, 8192, 8192}, {});
  const double bytes = 8e9;  // outlasts the GEMM
  b.exchange("pull", 1, -1, bytes, model::Transport::kCopyEngine, "", {});
  const double gemm_s = cost.kernel_seconds(graph.op(gemm));
  const double latency_s = 5e-6;
  REQUIRE(latency_s + bytes / (cost.port_Bps() * efficiency) > gemm_s);
  // Each GPU sends one pull and receives one, each at its port's rate times the copy engine's efficiency.
  const double draw_W = 2 * cost.port_Bps() * efficiency * 8 * pj_per_bit * 1e-12;
  const double clock = std::cbrt((700.0 - draw_W - 70) / 630.0);
  const double expected = latency_s + (gemm_s - latency_s) / clock;
  CHECK(test::end_of(sim::simulate(graph, cost), gemm, 0) == Approx(expected).epsilon(1e-6));

  SECTION("with no energy per bit the pulls leave it alone") {
    const sim::CostModel free(test::gpu_preset("h100-sxm"), profile_with_energy(0));
    CHECK(test::end_of(sim::simulate(graph, free), gemm, 0) == Approx(gemm_s).epsilon(1e-9));
  }
}

TEST_CASE("flows sharing a direction of the port draw as one flow at the port's rate, not as their sum") {
  sim::CostProfile profile = profile_with_energy(20);
  profile.copy_engine = {5e-6, 0.75};
  profile.copy_engine_all_ranks_efficiency.reset();
  profile.nccl = {5e-6, 0.75};
  profile.nccl_sms = profile.nccl_p2p_sms = 33;  // a quarter of 132 SMs, rings and send/recv alike
  profile.gemm.shared_tail_tiles = 0;            // no tail beside the SM exchange (tests/sim/engine_test.cpp)
  profile.nccl_call_latency_s = 0;
  sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  gpu.hbm_pJ_per_bit = 10;  // the FIFO accesses' draw below a whole number of the engine's power steps
  const sim::CostModel cost(gpu, profile);
  model::LayerGraph graph(4);
  model::ProgramBuilder b(graph, 0.0);
  const model::OpId gemm = b.gemm("gemm", {8192, 8192, 8192}, {});
  // Two flows out and two in per GPU (an SM exchange on the comm stream, a copy-engine one on the copy
  // stream): each direction of the port at its rate.
  b.exchange("a", 1, -1, 8e9, model::Transport::kSm, "", {});
  b.exchange("b", 2, -2, 8e9, model::Transport::kCopyEngine, "", {});
  const double gemm_s = cost.kernel_seconds(graph.op(gemm));
  // The SM exchange is NCCL's send/recv: its receiver writes and reads the FIFO and writes the output, 2 HBM
  // accesses per byte beyond a copy's (sim/cost/hbm_traffic.hpp); the copy-engine pull none. Both come in at the
  // same rate, so the direction's extra accesses are their mean, 1 per byte, at the GPU's 10 pJ/bit.
  const double rate = cost.port_Bps() * 0.75;
  const double draw_W = 2 * rate * 8 * 20 * 1e-12 + rate * 1.0 * 8 * 10 * 1e-12;
  const double share = 0.75, clock = std::cbrt((700.0 - draw_W - 70) / 630.0);
  // The SM exchange's kernel holds its SMs from the start; both flows move data after their 5 us latency.
  const double expected = 5e-6 + (gemm_s - 5e-6 * share) / (share * clock);
  CHECK(test::end_of(sim::simulate(graph, cost), gemm, 0) == Approx(expected).epsilon(1e-6));
}

TEST_CASE("a profile's transfer energy overrides its base and is refused outside 0 to 100 pJ/bit") {
  const sim::CostProfile p =
      sim::parse_profile("gpu: h100-sxm\nbase: h100-sxm\npower: {transfer_pJ_per_bit: 7.5}\n", "p.yaml");
  CHECK(p.power->transfer_pJ_per_bit == 7.5);
  CHECK(p.power->exponent == test::profile_preset("h100-sxm").power->exponent);
  CHECK_THROWS_WITH(sim::parse_profile("gpu: h100-sxm\nbase: h100-sxm\npower: {transfer_pJ_per_bit: 150}\n", "p.yaml"),
                    Catch::Contains("p.yaml:3:") && Catch::Contains("power.transfer_pJ_per_bit"));
}

TEST_CASE("the shipped profiles' transfer energy is the preset's HBM access energy plus one link end") {
  for (const char* name : {"h100-sxm", "h100-sxm-96gb", "a100-sxm", "h200-sxm"}) {
    INFO(name);
    const double hbm = test::gpu_preset(name).hbm_pJ_per_bit;
    REQUIRE(hbm > 0);
    CHECK(test::profile_preset(name).power->transfer_pJ_per_bit == Approx(hbm + 2.8));
  }
}
