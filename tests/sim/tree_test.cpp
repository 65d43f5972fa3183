// NCCL's double binary tree all-reduce: the schedule moves every chunk up and down both trees once,
// a small all-reduce costs 2 x (chain + tree depth) hop latencies, and auto takes it only where the
// profile has a tree section and the group spans nodes.
#include <catch2/catch.hpp>

#include <map>

#include "sim/engine/comm_plan.hpp"
#include "sim/engine/tree_schedule.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::CollectiveAlgorithm;
using model::CollectiveKind;

namespace {

sim::CostModel rail_with_tree(int nodes, double latency, double efficiency) {
  sim::CostProfile profile = test::profile_preset("h100-sxm");
  profile.tree = sim::TransportParams{latency, efficiency};
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  return sim::CostModel(gpu, profile, sim::resolve_fabric(sim::FabricRequest{"ib-rail", nodes}, gpu));
}

model::Op all_reduce(double bytes, CollectiveAlgorithm algorithm) {
  return test::collective_op(CollectiveKind::kAllReduce, bytes, algorithm);
}

}  // namespace

TEST_CASE("the double binary tree moves every chunk of both trees up once per non-root rank and down once per rank") {
  const int nodes = 4, per_node = 8, chunks = 3, ranks = nodes * per_node;
  const sim::PeerSchedule s = sim::double_binary_tree(nodes, per_node, chunks);
  CHECK(s.trees == 2);
  std::map<std::pair<int, int>, int> messages;  // (src, dst) -> count
  std::vector<int> sent(ranks, 0), received(ranks, 0);
  for (size_t step = 0; step < s.sends.size(); ++step) {
    for (int r = 0; r < ranks; ++r) {
      for (int dst : s.sends[step][r]) {
        ++messages[{r, dst}];
        ++sent[r];
      }
      for (int src : s.recvs[step][r]) {
        (void)src;
        ++received[r];
      }
    }
  }
  // Each tree edge carries every chunk once each way (up, then down); an edge both trees share (the
  // chains inside nodes) carries it twice.
  for (const auto& [edge, count] : messages) {
    INFO(edge.first << " -> " << edge.second);
    CHECK((count == chunks || count == 2 * chunks));
    CHECK(messages.count({edge.second, edge.first}) == 1);
  }
  // Inside a node every GPU but the first reduces into its predecessor, in both trees.
  CHECK(messages[{9, 8}] == 2 * chunks);
  int total_sent = 0, total_received = 0;
  for (int r = 0; r < ranks; ++r) {
    total_sent += sent[r];
    total_received += received[r];
  }
  // Per tree and chunk: ranks - 1 edges, each crossed up and down.
  CHECK(total_sent == 2 * chunks * 2 * (ranks - 1));
  CHECK(total_received == total_sent);
  // 4 nodes: heap depth 2 across nodes, 7 hops down each chain: 9 levels up, 9 down.
  CHECK(s.sends.size() == static_cast<size_t>(chunks - 1 + 2 * 9));
}

TEST_CASE("a tiny tree all-reduce across nodes takes its call latency and 2 x (chain + tree depth) hop latencies") {
  const double latency = 6e-6;
  const sim::CostModel cost = rail_with_tree(4, latency, 0.9);
  const double t = test::simulate_collective(cost, 32, CollectiveKind::kAllReduce, 64, CollectiveAlgorithm::kTree);
  CHECK(t == Approx(cost.profile().nccl_call_latency_s + 2 * (7 + 2) * latency).epsilon(1e-3));
  // The ring pays 2 (n - 1) network latencies instead.
  const double ring = test::simulate_collective(cost, 32, CollectiveKind::kAllReduce, 64, CollectiveAlgorithm::kRing);
  CHECK(ring > 2 * 31 * cost.profile().network->step_latency_s);
}

TEST_CASE("a simulated tree all-reduce is within 6% under its closed form, which auto and the fitter use") {
  const sim::CostModel cost = rail_with_tree(4, 6e-6, 0.85);
  for (double bytes : {1e6, 1.6e7, 2.6e8, 4.3e9}) {
    INFO(bytes);
    const sim::CommPlan plan = sim::plan_communication(all_reduce(bytes, CollectiveAlgorithm::kTree), 32, cost);
    REQUIRE(plan.algorithm == CollectiveAlgorithm::kTree);
    const double closed = sim::idle_seconds(plan, cost);
    const double t = test::simulate_collective(cost, 32, CollectiveKind::kAllReduce, bytes, CollectiveAlgorithm::kTree);
    CHECK(t <= closed * (1 + 1e-9));
    CHECK(t >= 0.94 * closed);  // ranks run ahead of the lockstep where no peer waits on them
  }
}

TEST_CASE("auto takes the tree only across nodes and only with a tree section, and never a slower plan") {
  const sim::CostModel cost = rail_with_tree(4, 6e-6, 0.85);
  const model::Op small = all_reduce(64 * 1024, CollectiveAlgorithm::kAuto);
  CHECK(sim::plan_communication(small, 32, cost).algorithm == CollectiveAlgorithm::kTree);
  CHECK(sim::plan_communication(small, 8, cost).algorithm != CollectiveAlgorithm::kTree);
  for (double bytes : {64e3, 1e6, 1.6e7, 2.6e8, 4.3e9}) {
    const sim::CommPlan chosen = sim::plan_communication(all_reduce(bytes, CollectiveAlgorithm::kAuto), 32, cost);
    for (CollectiveAlgorithm forced : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kTree}) {
      const sim::CommPlan other = sim::plan_communication(all_reduce(bytes, forced), 32, cost);
      CHECK(sim::idle_seconds(chosen, cost) <= sim::idle_seconds(other, cost) * (1 + 1e-12));
    }
  }
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const sim::CostModel no_tree(gpu, test::profile_preset("h100-sxm"),
                               sim::resolve_fabric(sim::FabricRequest{"ib-rail", 4}, gpu));
  CHECK(sim::plan_communication(small, 32, no_tree).algorithm == CollectiveAlgorithm::kRing);
  CHECK_THROWS_WITH(sim::plan_communication(all_reduce(1e6, CollectiveAlgorithm::kTree), 32, no_tree),
                    Catch::Contains("no tree section"));
}
