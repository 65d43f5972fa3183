// Compute-bound kernels under a board power limit: the clock the profile's power curve allows.
#include <catch2/catch.hpp>
#include <cmath>

#include "input/profile/profile_reader.hpp"
#include "model/scenario.hpp"
#include "sim/cost/power_limit.hpp"
#include "sim/run/scenario_run.hpp"
#include "test_support.hpp"

using namespace tpsim;

namespace {

const model::GemmShape kLargeGemm{16384, 8192, 8192};  // compute-bound: many full waves

sim::CostModel cost_at(const std::string& gpu_name, double limit_W) {
  sim::GpuSpec gpu = test::gpu_preset(gpu_name);
  gpu.power_limit_W = limit_W;
  return sim::CostModel(gpu, test::profile_preset(gpu_name));
}

// A one-layer Llama-3.1-8B forward scenario on `hardware` with one variant of `mode`.
std::string scenario_on(const std::string& hardware, int tp = 8, const std::string& mode = "sp") {
  return "name: t\nmodel: llama-3.1-8b\nhardware: {" + hardware +
         "}\nworkload: {phase: forward, batch: 4, seq_len: 1024, layers: 1}\nparallelism: {tp: " + std::to_string(tp) +
         "}\nvariants: [{name: " + mode + ", tp_mode: " + mode + "}]\n";
}

}  // namespace

TEST_CASE("a power limit at or above the profile's measured power keeps its compute rates", "[sim][power]") {
  const sim::PowerParams curve{700, 70, 3};
  CHECK(sim::clock_ratio_at(curve, 700) == 1.0);
  CHECK(sim::clock_ratio_at(curve, 1000) == 1.0);
}

TEST_CASE("below the measured power the clock is where the power curve meets the limit", "[sim][power]") {
  const sim::PowerParams curve{700, 70, 3};
  const double ratio = sim::clock_ratio_at(curve, 500);
  // P(f) = idle + (measured - idle) (f / f_measured)^exponent, solved at P = 500 W.
  CHECK(ratio == Approx(std::cbrt(430.0 / 630.0)));
  CHECK(curve.idle_W + (curve.measured_at_W - curve.idle_W) * std::pow(ratio, curve.exponent) == Approx(500.0));
}

TEST_CASE(
    "the 96 GB H100 preset at its 500 W default limit: a kernel alone at the short benchmarks' clock, kernels back to "
    "back at the clock the limit allows them, memory-bound kernels unchanged",
    "[sim][power]") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm-96gb");
  REQUIRE(gpu.power_limit_W == 500.0);
  REQUIRE(gpu.board_power_W == 700.0);
  const sim::CostProfile profile = test::profile_preset("h100-sxm-96gb");
  REQUIRE(sim::windowed_power(profile));
  const sim::CostModel at_default(gpu, profile);
  const sim::CostModel at_board = cost_at("h100-sxm-96gb", 700);
  // The limiter averages over a window longer than a kernel: one alone runs at the clock its rates were measured at.
  CHECK(at_default.clock_ratio() == 1.0);
  CHECK(at_default.gemm_compute_seconds(kLargeGemm, false) == at_board.gemm_compute_seconds(kLargeGemm, false));
  // Back to back, P(r) = idle + (measured - idle) (r / sustained)^exponent meets 500 W.
  const sim::PowerParams& curve = *profile.power;
  const double back_to_back =
      curve.sustained_ratio *
      std::pow((500.0 - curve.idle_W) / (curve.measured_at_W - curve.idle_W), 1.0 / curve.exponent);
  CHECK(sim::back_to_back_clock_ratio(gpu, profile) == Approx(back_to_back));
  CHECK(back_to_back < sim::back_to_back_clock_ratio(at_board.gpu(), profile));
  const sim::CostModel held = at_default.at_clock(back_to_back);
  CHECK(held.gemm_compute_seconds(kLargeGemm, false) ==
        Approx(at_board.gemm_compute_seconds(kLargeGemm, false) / back_to_back));
  model::Op attention;
  attention.kind = model::OpKind::kAttention;
  attention.flops = 1e14;
  CHECK(held.kernel_cost(attention).compute_s == Approx(at_board.kernel_cost(attention).compute_s / back_to_back));
  CHECK(held.memory_seconds(1e9) == at_board.memory_seconds(1e9));
}

TEST_CASE("the default H100 SXM profile is measured at the preset's board power, so its numbers stand",
          "[sim][power]") {
  const sim::CostModel h100 = test::h100_cost();
  CHECK(test::profile_preset("h100-sxm").power->measured_at_W == test::gpu_preset("h100-sxm").board_power_W);
  CHECK(sim::compute_clock_ratio(h100.gpu(), h100.profile()) == 1.0);
}

TEST_CASE("a power limit is refused above the board power and without a power curve below it", "[sim][power]") {
  CHECK_THROWS_WITH(
      sim::run_scenario(model::parse_scenario(scenario_on("gpu: h100-sxm, power_limit_W: 800"), "t.yaml")),
      Catch::Contains("t.yaml:3:") && Catch::Contains("above h100-sxm's board power of 700 W"));
  sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  gpu.power_limit_W = 400;
  sim::CostProfile no_curve = test::profile_preset("h100-sxm");
  no_curve.power.reset();
  CHECK_THAT(sim::power_limit_unsupported_reason(gpu, no_curve), Catch::Contains("power section"));
  sim::CostProfile curve = test::profile_preset("h100-sxm");
  gpu.power_limit_W = 60;
  CHECK_THAT(sim::power_limit_unsupported_reason(gpu, curve), Catch::Contains("idle draw"));
}

TEST_CASE("a scenario's power limit slows its GEMM-bound layer by the clock ratio", "[sim][power]") {
  const auto run_at = [](const std::string& limit) {
    const std::string text = scenario_on("gpu: h100-sxm" + limit, 8, "nocomm");
    return sim::run_scenario(model::parse_scenario(text, "t.yaml")).variants.front();
  };
  const sim::VariantRun stock = run_at(""), capped = run_at(", power_limit_W: 400");
  const double ratio = sim::clock_ratio_at(*test::profile_preset("h100-sxm").power, 400);
  CHECK(capped.metrics.time_s > stock.metrics.time_s);
  CHECK(capped.metrics.time_s < stock.metrics.time_s / ratio);  // memory-bound kernels keep their rate
}

TEST_CASE("H100 PCIe cards have no NVSwitch: topology nvswitch is refused, pcie runs", "[sim][power]") {
  const std::string text = scenario_on("gpu: h100-pcie, topology: nvswitch", 4, "tp");
  CHECK_THROWS_WITH(sim::run_scenario(model::parse_scenario(text, "t.yaml")),
                    Catch::Contains("t.yaml:3:") && Catch::Contains("use topology pcie"));
  std::string pcie = text;
  pcie.replace(pcie.find("nvswitch"), 8, "pcie");
  CHECK(sim::run_scenario(model::parse_scenario(pcie, "t.yaml")).variants.front().metrics.time_s > 0);
}

TEST_CASE("a profile's power section overrides its base key by key and keeps idle below measured power",
          "[sim][power]") {
  const sim::CostProfile p = sim::parse_profile("gpu: h100-sxm\nbase: h100-sxm\npower: {exponent: 2}\n", "p.yaml");
  CHECK(p.power->exponent == 2.0);
  CHECK(p.power->measured_at_W == 700.0);
  CHECK_THROWS_WITH(sim::parse_profile("gpu: h100-sxm\nbase: h100-sxm\npower: {idle_W: 800}\n", "p.yaml"),
                    Catch::Contains("p.yaml:3:") && Catch::Contains("must be below power.measured_at_W"));
}
