// Rank skew's section and its factors: log-normal with mean 1 and the asked CV, the same on every call.
#include <catch2/catch.hpp>
#include <cmath>

#include "input/sweep.hpp"
#include "model/parallel/rank_skew.hpp"
#include "model/scenario.hpp"

using namespace tpsim;

namespace {

std::string scenario_with(const std::string& skew) {
  return "name: t\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nworkload: {phase: forward, batch: 1, seq_len: 1024, "
         "layers: 1}\nparallelism: {tp: 8}\nvariants: [{name: sp, tp_mode: sp}]\nskew: " +
         skew + "\n";
}

}  // namespace

TEST_CASE("a scenario's skew section reads its CVs and seed, and without one there is no skew") {
  const model::Scenario s = model::parse_scenario(scenario_with("{kernel_cv: 0.03, gpu_cv: 0.05, seed: 7}"), "t.yaml");
  CHECK(s.skew.kernel_cv == 0.03);
  CHECK(s.skew.gpu_cv == 0.05);
  CHECK(s.skew.seed == 7);
  std::string plain = scenario_with("{}");
  plain.erase(plain.find("skew:"));
  CHECK_FALSE(model::parse_scenario(plain, "t.yaml").skew.enabled());
}

TEST_CASE(
    "a skew section is refused with its location for out-of-range CVs, a fractional seed, unknown keys or "
    "no CV at all") {
  const auto refused = [](const std::string& skew, const std::string& what) {
    CHECK_THROWS_WITH(model::parse_scenario(scenario_with(skew), "t.yaml"),
                      Catch::Contains("t.yaml:7:") && Catch::Contains(what));
  };
  refused("{kernel_cv: 0.8}", "skew.kernel_cv");
  refused("{gpu_cv: -0.1}", "skew.gpu_cv");
  refused("{kernel_cv: 0.03, seed: 1.5}", "whole number");
  refused("{kernel_cv: 0.03, sigma: 1}", "sigma");
  refused("{seed: 3}", "needs kernel_cv or gpu_cv above 0");
}

TEST_CASE("skew factors have mean 1 and the asked coefficient of variation, and repeat exactly") {
  model::RankSkew skew;
  skew.kernel_cv = 0.05;
  skew.seed = 11;
  const int draws = 40000;
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < draws; ++i) {
    const double f = model::skew_factor(skew, static_cast<uint64_t>(i), i % 8);
    sum += f;
    sum_sq += f * f;
  }
  const double mean = sum / draws;
  const double cv = std::sqrt(sum_sq / draws - mean * mean) / mean;
  // Standard errors at 40,000 draws: 0.05 / 200 = 0.00025 on the mean, about 0.7% of the CV.
  CHECK(mean == Approx(1.0).margin(0.001));
  CHECK(cv == Approx(0.05).epsilon(0.03));
  CHECK(model::skew_factor(skew, 123, 4) == model::skew_factor(skew, 123, 4));
  model::RankSkew other = skew;
  other.seed = 12;
  CHECK(model::skew_factor(other, 123, 4) != model::skew_factor(skew, 123, 4));
}

TEST_CASE("a GPU's skew factor is one draw for all its kernels, and kernel skew varies kernel to kernel") {
  model::RankSkew per_gpu;
  per_gpu.gpu_cv = 0.1;
  CHECK(model::skew_factor(per_gpu, 1, 3) == model::skew_factor(per_gpu, 999, 3));
  CHECK(model::skew_factor(per_gpu, 1, 3) != model::skew_factor(per_gpu, 1, 4));
  model::RankSkew per_kernel;
  per_kernel.kernel_cv = 0.1;
  CHECK(model::skew_factor(per_kernel, 1, 3) != model::skew_factor(per_kernel, 2, 3));
  CHECK(model::skew_factor(model::RankSkew{}, 1, 3) == 1.0);
}

TEST_CASE("a sweep over skew.seed gives each point its seed, and a scenario without a skew section cannot sweep it") {
  const model::Scenario base =
      model::parse_scenario(scenario_with("{kernel_cv: 0.03, seed: 1}") + "sweep: {skew.seed: [4, 9]}\n", "t.yaml");
  const model::SweepPlan plan(base);
  REQUIRE(plan.size() == 2);
  CHECK(plan.point(0).skew.seed == 4);
  CHECK(plan.point(1).skew.seed == 9);
  CHECK(plan.point(1).skew.kernel_cv == 0.03);
  std::string plain = scenario_with("{}");
  plain.erase(plain.find("skew:"));
  CHECK_THROWS_WITH(model::SweepPlan(model::parse_scenario(plain + "sweep: {skew.seed: [4]}\n", "t.yaml")).point(0),
                    Catch::Contains("no skew mapping"));
}
