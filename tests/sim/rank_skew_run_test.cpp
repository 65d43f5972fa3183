// Rank skew in the engine and in a scenario's report: collectives wait for the slowest rank.
#include <algorithm>
#include <catch2/catch.hpp>

#include "model/graph/program_builder.hpp"
#include "model/scenario.hpp"
#include "sim/engine/isolated_run.hpp"
#include "sim/run/scenario_run.hpp"
#include "test_support.hpp"

using namespace tpsim;

namespace {

const std::string kScenario =
    "name: t\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nworkload: {phase: forward, batch: 2, seq_len: 4096, "
    "layers: 2}\nparallelism: {tp: 8}\nvariants: [{name: sp, tp_mode: sp}, {name: async, tp_mode: async, chunks: 8, "
    "transport: copy_engine}]\n";

}  // namespace

TEST_CASE("under GPU skew a ring all-gather after a GEMM ends when the slowest GPU's GEMM and the ring are done") {
  const sim::CostModel cost = test::h100_fixed_clock_cost();  // a mechanics test: the same clock alone and skewed
  model::LayerGraph graph(8);
  model::ProgramBuilder b(graph, 0.0);  // zero element bytes: a compute-bound GEMM
  const model::OpId gemm = b.gemm("gemm", {8192, 8192, 8192}, {});
  const model::OpId gather = b.collective("ag", model::CollectiveKind::kAllGather, 64e6, "", {gemm});
  sim::EngineOptions skewed;
  skewed.skew.gpu_cv = 0.1;
  skewed.skew.seed = 3;
  const sim::Timeline alone = sim::simulate(graph, cost);
  const double gemm_s = test::end_of(alone, gemm, 0);
  const double gather_s = test::end_of(alone, gather, 0) - gemm_s;
  const sim::Timeline timeline = sim::simulate(graph, cost, skewed);
  double slowest = 0;
  for (int r = 0; r < 8; ++r) {
    const double own = gemm_s * model::skew_factor(skewed.skew, gemm, r);
    CHECK(test::end_of(timeline, gemm, r) == Approx(own).epsilon(1e-9));
    slowest = std::max(slowest, own);
  }
  REQUIRE(slowest > gemm_s);
  // The slowest GPU enters the ring last; every step needs both its ends, so it finishes the ring's whole time later.
  for (int r = 0; r < 8; ++r) CHECK(test::end_of(timeline, gather, r) == Approx(slowest + gather_s).epsilon(1e-6));
}

TEST_CASE(
    "a scenario with skew reports each variant's skewed time beside unchanged skew-free numbers, the same for "
    "the same seed") {
  const auto run = [](const std::string& skew) {
    return sim::run_scenario(model::parse_scenario(kScenario + skew, "t.yaml"));
  };
  const sim::ScenarioRun plain = run("");
  const sim::ScenarioRun skewed = run("skew: {kernel_cv: 0.05, gpu_cv: 0.05, seed: 1}\n");
  const sim::ScenarioRun again = run("skew: {kernel_cv: 0.05, gpu_cv: 0.05, seed: 1}\n");
  const sim::ScenarioRun other = run("skew: {kernel_cv: 0.05, gpu_cv: 0.05, seed: 2}\n");
  for (size_t i = 0; i < plain.variants.size(); ++i) {
    INFO(plain.variants[i].variant.name);
    CHECK_FALSE(plain.variants[i].skewed_time_s);
    CHECK(skewed.variants[i].metrics.time_s == plain.variants[i].metrics.time_s);
    REQUIRE(skewed.variants[i].skewed_time_s);
    // Every collective waits for its slowest rank: mean-1 factors lengthen the step.
    CHECK(*skewed.variants[i].skewed_time_s > plain.variants[i].metrics.time_s);
    CHECK(*again.variants[i].skewed_time_s == *skewed.variants[i].skewed_time_s);
    CHECK(*other.variants[i].skewed_time_s != *skewed.variants[i].skewed_time_s);
  }
}
