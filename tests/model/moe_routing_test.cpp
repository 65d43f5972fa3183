// MoE routing: skew and its seed, capacity drops, routing files and group-limited routers, and how the busiest
// GPU's copies set the all-to-alls' bytes, the expert GEMMs' rows and a skewed routing's cost.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "base/input_error.hpp"
#include "input/moe_routing_file.hpp"
#include "model/graph/graph_builder.hpp"
#include "model/moe/moe_routing.hpp"
#include "model/scenario.hpp"
#include "moe_support.hpp"
#include "sim/run/scenario_run.hpp"
#include "test_support.hpp"

using namespace tpsim;
using namespace tpsim::test::moe;
using Catch::Matchers::Contains;
using test::op_named;

namespace {

// The copies the busiest of `ep` GPUs computes in `layer`, from each expert's share, by brute force.
double busiest_copies(const model::ArchSpec& arch, const model::ExpertParallel& routing, double group_copies,
                      int64_t layer) {
  const std::vector<double> shares = model::expert_shares(arch.moe, routing, layer);
  const int64_t local = arch.moe.experts / routing.degree;
  double busiest = 0;
  for (int rank = 0; rank < routing.degree; ++rank) {
    double copies = 0;
    for (int64_t e = rank * local; e < (rank + 1) * local; ++e) {
      double routed = shares[static_cast<size_t>(e)] * group_copies;
      if (routing.drop) routed = std::min(routed, routing.capacity_factor * group_copies / arch.moe.experts);
      copies += routed;
    }
    busiest = std::max(busiest, copies);
  }
  return busiest;
}

}  // namespace

TEST_CASE("skewed routing makes the busiest rank's copies set the all-to-alls' bytes and the expert GEMMs' rows") {
  const model::ArchSpec arch = qwen3_moe();
  const model::ExpertParallel routing = [] {
    model::ExpertParallel r = zipf(1.2);
    r.degree = kEp;
    return r;
  }();
  const auto w = with_experts(test::forward_workload(2, 4096, 3), kEp, routing);
  const model::LayerGraph g = model::build_layer_graph(arch, w, kTp, test::variant(model::TpMode::kSp));
  const double rank_tokens = 2.0 * 4096 / kTp;
  const double group_copies = rank_tokens * arch.moe.experts_per_token * kEp;
  for (int64_t layer = 0; layer < 3; ++layer) {
    INFO("layer " << layer);
    const double busiest = busiest_copies(arch, routing, group_copies, layer);
    CHECK(busiest > 1.5 * group_copies / kEp);  // Zipf 1.2 over 128 experts: far from balanced
    const auto rows = static_cast<int64_t>(std::ceil(busiest - 1e-6));
    const std::string prefix = "L" + std::to_string(layer) + ".moe.";
    CHECK(op_named(g, prefix + "dispatch").tensor_bytes == Approx(rows * arch.hidden * 2.0));
    CHECK(op_named(g, prefix + "experts.gate_up_proj").gemm.m == rows);
  }
  // Each layer has its own popular experts.
  CHECK(op_named(g, "L0.moe.dispatch").tensor_bytes != op_named(g, "L1.moe.dispatch").tensor_bytes);
}

TEST_CASE("a skewed layer's model FLOPs count the mean GPU's copies, its kernels the busiest GPU's") {
  const model::ArchSpec arch = qwen3_moe();
  const auto balanced = with_experts(test::forward_workload(1, 2048, 1), kEp);
  const auto skewed = with_experts(test::forward_workload(1, 2048, 1), kEp, zipf(1.0));
  const auto graph = [&](const model::Workload& w) {
    return model::build_layer_graph(arch, w, 1, test::variant(model::TpMode::kSp));
  };
  const model::LayerGraph even = graph(balanced), uneven = graph(skewed);
  CHECK(uneven.model_flops() == Approx(even.model_flops()).epsilon(1e-9));
  CHECK(model::gemm_flops(op_named(uneven, "L0.moe.experts.down_proj").gemm) >
        model::gemm_flops(op_named(even, "L0.moe.experts.down_proj").gemm));
}

TEST_CASE("a capacity factor drops the copies above each expert's capacity and caps the busiest GPU") {
  const model::ArchSpec arch = qwen3_moe();
  model::ExpertParallel routing = zipf(1.2);
  routing.degree = kEp;
  const model::LayerRouting dropless = model::route_layer(arch.moe, routing, 1024, 0);
  routing.drop = true;
  routing.capacity_factor = 1.25;
  const model::LayerRouting capped = model::route_layer(arch.moe, routing, 1024, 0);
  const double group = 1024.0 * arch.moe.experts_per_token * kEp;
  const double capacity = 1.25 * group / arch.moe.experts;
  double dropped = 0;
  for (const double share : model::expert_shares(arch.moe, routing, 0))
    dropped += std::max(0.0, share * group - capacity);
  CHECK(capped.dropped_copies == Approx(dropped));
  CHECK(dropped > 0);
  CHECK(capped.busiest_copies == Approx(busiest_copies(arch, routing, group, 0)));
  CHECK(capped.busiest_copies <= capacity * arch.moe.experts / kEp + 1e-9);
  CHECK(capped.busiest_copies < dropless.busiest_copies);
  CHECK(dropless.dropped_copies == 0);
  CHECK(dropless.imbalance() > capped.imbalance());
}

TEST_CASE("routing is a function of its seed and layer: the same seed routes alike, another seed otherwise") {
  const model::ArchSpec arch = qwen3_moe();
  CHECK(model::expert_shares(arch.moe, zipf(1.0, 7), 3) == model::expert_shares(arch.moe, zipf(1.0, 7), 3));
  CHECK(model::expert_shares(arch.moe, zipf(1.0, 7), 3) != model::expert_shares(arch.moe, zipf(1.0, 8), 3));
  const std::vector<double> shares = model::expert_shares(arch.moe, zipf(1.0, 7), 3);
  CHECK(std::accumulate(shares.begin(), shares.end(), 0.0) == Approx(1.0));
  const std::vector<double> flat = model::expert_shares(arch.moe, zipf(0.0), 0);
  CHECK(std::all_of(flat.begin(), flat.end(), [&](double s) { return s == 1.0 / arch.moe.experts; }));
}

TEST_CASE("a skewed routing's cost is each variant's time beside the same variant's under balanced dropless routing") {
  const std::string skewed = R"(name: t
model: qwen3-30b-a3b
hardware: {gpu: h100-sxm, topology: nvswitch}
workload: {phase: forward, batch: 1, seq_len: 2048, layers: 2}
parallelism: {tp: 2, ep: 8}
moe: {routing: zipf, zipf_s: 1.0}
variants:
  - {name: sp, tp_mode: sp}
)";
  std::string balanced = skewed;
  balanced.replace(balanced.find("moe:"), balanced.find("variants:") - balanced.find("moe:"), "");
  const sim::ScenarioRun with_skew = sim::run_scenario(model::parse_scenario(skewed, "s.yaml"));
  const sim::ScenarioRun without = sim::run_scenario(model::parse_scenario(balanced, "b.yaml"));
  REQUIRE(with_skew.variants.front().balanced_routing_time_s);
  CHECK(*with_skew.variants.front().balanced_routing_time_s == without.variants.front().metrics.time_s);
  CHECK(with_skew.variants.front().metrics.time_s > without.variants.front().metrics.time_s);
  CHECK_FALSE(without.variants.front().balanced_routing_time_s);  // nothing to compare balanced routing with
  // A capacity that drops 38% of the copies leaves the busiest GPU fewer than a balanced share: faster, and lossy.
  std::string dropping = skewed;
  dropping.replace(dropping.find("zipf_s: 1.0}"), 12, "zipf_s: 1.0, drop: true, capacity_factor: 2.0}");
  const sim::ScenarioRun dropped = sim::run_scenario(model::parse_scenario(dropping, "d.yaml"));
  CHECK(*dropped.variants.front().balanced_routing_time_s == without.variants.front().metrics.time_s);
  CHECK(dropped.variants.front().metrics.time_s < without.variants.front().metrics.time_s);
}

TEST_CASE(
    "a routing file's token counts are each layer's expert shares, and a bad row is refused at its line and "
    "column") {
  const std::string dir = std::filesystem::temp_directory_path() / "tpsim_moe_routing_test";
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  const model::ArchSpec arch = qwen3_moe();
  // Layer 0: expert 3 gets three quarters; layer 1: experts 0 and 127 half each; layers past the simulated
  // two need no rows.
  const std::string good = write("good.csv", "layer,expert,tokens\n0,3,300\n0,4,100\n1,0,5\n1,127,5\n40,1,7\n");
  const auto shares = model::read_routing_file(good, arch.moe.experts, arch.layers, 2);
  CHECK(shares[0][3] == 0.75);
  CHECK(shares[0][4] == 0.25);
  CHECK(shares[1][0] == 0.5);
  CHECK(shares[1][127] == 0.5);
  CHECK(shares[40][1] == 1.0);
  model::ExpertParallel routing;
  routing.degree = kEp;
  routing.routing = model::Routing::kFromFile;
  routing.layer_shares = shares;
  // Experts 0-15 sit on GPU 0: all of layer 0's copies land there.
  CHECK(model::route_layer(arch.moe, routing, 1024, 0).busiest_copies == Approx(1024.0 * 8 * kEp));
  CHECK(model::route_layer(arch.moe, routing, 1024, 1).imbalance() == Approx(kEp / 2.0));

  const auto refused = [&](const std::string& name, const std::string& text, int64_t simulated = 2) {
    const std::string path = write(name, text);
    std::string message;
    try {
      model::read_routing_file(path, arch.moe.experts, arch.layers, simulated);
    } catch (const InputError& error) {
      message = error.what();
    }
    return message;
  };
  CHECK_THAT(refused("header.csv", "layer,tokens\n0,1\n"),
             Contains("header.csv:1:1:") && Contains("layer,expert,tokens"));
  CHECK_THAT(refused("expert.csv", "layer,expert,tokens\n0,5,10\n0,200,3\n"),
             Contains("expert.csv:3:3:") && Contains("expert must be a whole number from 0 to 127, got '200'"));
  CHECK_THAT(refused("layer.csv", "layer,expert,tokens\n48,5,10\n"), Contains("layer.csv:2:1:") && Contains("0 to 47"));
  CHECK_THAT(refused("tokens.csv", "layer,expert,tokens\n0,5,-1\n"),
             Contains("tokens.csv:2:5:") && Contains("got '-1'"));
  CHECK_THAT(refused("fields.csv", "layer,expert,tokens\n0,5\n"), Contains("fields.csv:2:1:") && Contains("3 fields"));
  CHECK_THAT(refused("twice.csv", "layer,expert,tokens\n0,5,1\n1,5,1\n0,5,2\n"),
             Contains("twice.csv:4:1:") && Contains("layer 0, expert 5 is given twice"));
  CHECK_THAT(refused("missing.csv", "layer,expert,tokens\n0,5,1\n"), Contains("layer 1 has no tokens"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a group-limited router sends a token to at most topk_group nodes when each node holds one group") {
  // DeepSeek-V3: 256 experts in 8 groups of 32, each token's 8 experts within its 4 best groups. Over EP64 on 8
  // nodes each node holds one group, each GPU 4 experts of one.
  model::ArchSpec arch = model::load_model_preset("deepseek-v3");
  model::ExpertParallel ep;
  ep.degree = 64;
  ep.dispatcher = model::Dispatcher::kDeepEp;
  ep.node_gpus = 8;
  // C(pool - held, 8) / C(pool, 8): 8 distinct experts of a pool all missing `held` of them.
  const auto miss = [](int pool, int held) {
    double p = 1;
    for (int j = 0; j < 8; ++j) p *= static_cast<double>(pool - held - j) / (pool - j);
    return p;
  };
  const model::LayerRouting limited = model::route_layer(arch.moe, ep, 128, 3);
  // A node's group is among the token's 4 with probability 4/8, then hit unless all 8 picks of the 128 experts
  // of the 4 groups miss its 32.
  CHECK(limited.destination_nodes == Approx(8 * 0.5 * (1 - miss(128, 32))).epsilon(1e-12));
  CHECK(limited.destination_nodes <= 4.0);
  CHECK(limited.busiest_received_tokens == Approx(64 * 128 * 0.5 * (1 - miss(128, 4))).epsilon(1e-12));
  // Without the limit the 8 picks spread over the 256 experts, and over more nodes.
  arch.moe.group_limit = arch.moe.groups;
  const model::LayerRouting free = model::route_layer(arch.moe, ep, 128, 3);
  CHECK(free.destination_nodes == Approx(8 * (1 - miss(256, 32))).epsilon(1e-12));
  CHECK(free.destination_nodes > limited.destination_nodes + 1.0);
}
