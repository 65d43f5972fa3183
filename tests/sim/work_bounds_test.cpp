// Bounds on a simulation's work: large groups' collectives in closed form, and the estimate that refuses a run
// past tpsim's limits before it starts.
#include <catch2/catch.hpp>

#include "base/input_error.hpp"
#include "base/limits.hpp"
#include "model/graph/program_builder.hpp"
#include "sim/engine/comm_plan.hpp"
#include "sim/engine/data_group.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/isolated_run.hpp"
#include "sim/engine/work_estimate.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::CollectiveAlgorithm;
using model::CollectiveKind;

namespace {

// H100s on an ib-rail fabric of `ranks` / 8 nodes.
sim::CostModel rail_cost(int ranks) {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  return sim::CostModel(gpu, test::profile_preset("h100-sxm"),
                        sim::resolve_fabric(sim::FabricRequest{"ib-rail", ranks / 8, 0, 1}, gpu));
}

// One 1 GiB ring all-reduce over `ranks` GPUs: its graph.
model::LayerGraph ring_graph(int ranks) {
  model::LayerGraph graph(ranks);
  model::ProgramBuilder b(graph, 2.0);
  b.set_collective_algorithm(CollectiveAlgorithm::kRing);
  b.collective("c", CollectiveKind::kAllReduce, 1 << 30, "", {});
  return graph;
}

}  // namespace

TEST_CASE("a collective over a group too large to step through runs in closed form, at its idle-fabric time") {
  const int ranks = 4096;
  const sim::CostModel cost = rail_cost(ranks);
  const model::LayerGraph graph = ring_graph(ranks);
  const sim::CommPlan stepped = sim::plan_communication(graph.op(0), ranks, cost);
  // A ring all-reduce starts 2 (n - 1) flows per rank.
  REQUIRE(sim::stepped_flows(stepped) == int64_t{2} * (ranks - 1) * ranks);
  REQUIRE(sim::stepped_flows(stepped) > model::kMaxSteppedFlows);
  const auto plans = sim::plan_program(graph, cost);
  CHECK((*plans)[0].outside.has_value());
  // Alone on an idle fabric the closed form takes exactly the ring's idle time (which the stepped ring matches, as
  // the multi-node tests check on 16 GPUs).
  CHECK(sim::simulate(graph, cost).makespan_s == Approx(sim::idle_seconds(stepped, cost)).epsilon(1e-9));
}

TEST_CASE("below the flow limit a ring runs step by step, as fast as its closed form on an idle fabric") {
  const int ranks = 128;  // 2 x 127 x 128 = 32,512 flows
  const sim::CostModel cost = rail_cost(ranks);
  const model::LayerGraph graph = ring_graph(ranks);
  const auto plans = sim::plan_program(graph, cost);
  REQUIRE_FALSE((*plans)[0].outside.has_value());
  CHECK(sim::simulate(graph, cost).makespan_s ==
        Approx(sim::idle_seconds((*plans)[0], cost)).epsilon(1e-6));  // the simulation's own rounding
}

TEST_CASE("work past tpsim's limits is refused with the estimate, the limit and what would run instead") {
  // 100 ops on 10,000 GPUs: their state alone is 1e6 instances; the platform's table over 1e8 pairs of GPUs.
  const sim::WorkEstimate held = sim::estimate_program_memory(100, 10'000);
  CHECK(held.op_instances == 1e6);
  CHECK_NOTHROW(sim::refuse_unbounded_work(held, "x"));
  const sim::WorkEstimate large = sim::estimate_program_memory(1e6, 100'000);
  REQUIRE(large.bytes > model::kMaxSimulationBytes);
  CHECK_THROWS_WITH(sim::refuse_unbounded_work(large, "simulate less"),
                    Catch::Contains("GiB of state, past tpsim's limit of 8 GiB") &&
                        Catch::Contains("100000 GPUs simulated") && Catch::EndsWith("; simulate less"));
  sim::WorkEstimate slow;
  slow.gpus = 8;
  slow.activities = 1e10;
  slow.seconds = 3000;
  CHECK_THROWS_WITH(sim::refuse_unbounded_work(slow, "simulate less"),
                    Catch::Contains("1e+10 activities, about 3e+03 s, past tpsim's limit of 300 s"));
}

TEST_CASE("a program's estimated activities count its kernels and each flow its collectives start") {
  const int ranks = 8;
  const sim::CostModel cost = test::h100_cost();
  model::LayerGraph graph(ranks);
  model::ProgramBuilder b(graph, 2.0);
  b.set_collective_algorithm(CollectiveAlgorithm::kRing);
  const model::OpId gemm = b.gemm("g", model::GemmShape{1024, 1024, 1024}, {});
  b.collective("c", CollectiveKind::kAllReduce, 1 << 20, "", {gemm});
  const auto plans = sim::plan_program(graph, cost);
  const sim::WorkEstimate work = sim::estimate_work(graph, *plans, sim::EngineOptions{});
  // Per GPU: the kernel's 3 (gate, overhead, work); the collective's 2 and 2 per flow, 2 (n - 1) flows of a ring.
  CHECK(work.activities == Approx(ranks * (3 + 2 + 2.0 * 2 * (ranks - 1))));
  CHECK(work.op_instances == 2 * ranks);
}
