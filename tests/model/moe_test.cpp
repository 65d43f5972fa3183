// MoE layers under expert parallelism: the all-to-alls' bytes, routing skew and drops, the grouped expert GEMMs,
// the expert gradients' data-parallel group, and the scenario rules.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "base/input_error.hpp"
#include "input/moe_routing_file.hpp"
#include "model/graph/graph_builder.hpp"
#include "model/memory/parameter_count.hpp"
#include "model/moe/moe_routing.hpp"
#include "model/scenario.hpp"
#include "sim/cost/fabric.hpp"
#include "sim/engine/data_group.hpp"
#include "sim/run/scenario_run.hpp"
#include "test_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;
using model::OpKind;
using model::OpStage;
using test::op_named;

namespace {

constexpr int kTp = 2;
constexpr int kEp = 8;

model::ArchSpec qwen3_moe() {
  return model::load_model_preset("qwen3-30b-a3b");
}

model::Workload with_experts(model::Workload w, int ep, model::ExpertParallel routing = {}) {
  routing.degree = ep;
  w.expert_parallel = routing;
  return w;
}

model::ExpertParallel zipf(double s, uint64_t seed = 1) {
  model::ExpertParallel ep;
  ep.routing = model::Routing::kZipf;
  ep.zipf_s = s;
  ep.seed = seed;
  return ep;
}

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

TEST_CASE(
    "the all-to-all of balanced routing moves tokens x experts_per_token x hidden x (ep-1)/ep bytes per rank "
    "each way") {
  const model::ArchSpec arch = qwen3_moe();
  const auto w = with_experts(test::forward_workload(2, 4096, 2), kEp);
  const model::LayerGraph g = model::build_layer_graph(arch, w, kTp, test::variant(model::TpMode::kSp));
  const double rank_tokens = 2.0 * 4096 / kTp;  // sequence parallelism: each rank routes its own rows
  const double copies_bytes = rank_tokens * arch.moe.experts_per_token * static_cast<double>(arch.hidden) * 2.0;
  for (const char* name : {"L1.moe.dispatch", "L1.moe.combine"}) {
    INFO(name);
    const model::Op& a2a = op_named(g, name);
    CHECK(a2a.collective == model::CollectiveKind::kAllToAll);
    CHECK(a2a.group == model::CommGroup::kExpert);
    CHECK(a2a.group_size == kEp);
    CHECK(model::wire_bytes_per_rank(a2a) == Approx(copies_bytes * (kEp - 1) / kEp).epsilon(1e-12));
  }
}

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

TEST_CASE("grouped-GEMM FLOPs equal the sum over the local experts of the tokens they receive") {
  const model::ArchSpec arch = qwen3_moe();
  const auto w = with_experts(test::forward_workload(1, 2048, 1), kEp);
  const model::LayerGraph g = model::build_layer_graph(arch, w, 1, test::variant(model::TpMode::kSp));
  // Balanced: each of the 16 local experts receives 1/128 of the group's 8 x 2048 x 8 copies.
  const int64_t local = arch.moe.experts / kEp;
  const double per_expert = 8.0 * 2048 * arch.moe.experts_per_token / arch.moe.experts;
  double received = 0;
  for (int64_t e = 0; e < local; ++e) received += per_expert;
  const model::Op& gate_up = op_named(g, "L0.moe.experts.gate_up_proj");
  CHECK(gate_up.gemm.groups == local);
  CHECK(model::gemm_flops(gate_up.gemm) == Approx(2.0 * received * 2 * arch.moe.expert_ffn * arch.hidden));
  const model::Op& down = op_named(g, "L0.moe.experts.down_proj");
  CHECK(model::gemm_flops(down.gemm) == Approx(2.0 * received * arch.hidden * arch.moe.expert_ffn));
  // Every expert's weights are read: the local experts' [hidden, 2 x ffn] each.
  CHECK(gate_up.bytes_read == Approx(2.0 * (received * arch.hidden + local * arch.hidden * 2 * arch.moe.expert_ffn)));
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

TEST_CASE(
    "an MoE training step's backward does twice its forward's expert GEMM FLOPs, and sends the copies back "
    "twice") {
  const model::ArchSpec arch = qwen3_moe();
  const auto w = with_experts(test::train_workload(1, 2048, 2), kEp);
  const model::LayerGraph g = model::build_layer_graph(arch, w, kTp, test::variant(model::TpMode::kSp));
  double forward = 0, backward = 0;
  int forward_a2a = 0, backward_a2a = 0;
  for (const model::Op& op : g.ops()) {
    if (op.layer != 1 || op.module != 3) continue;
    if (op.kind == OpKind::kGemm) (op.stage == OpStage::kForward ? forward : backward) += model::gemm_flops(op.gemm);
    if (op.kind == OpKind::kCollective && op.collective == model::CollectiveKind::kAllToAll) {
      ++(op.stage == OpStage::kForward ? forward_a2a : backward_a2a);
    }
  }
  CHECK(forward > 0);
  CHECK(backward == Approx(2.0 * forward));
  CHECK(forward_a2a == 2);
  CHECK(backward_a2a == 2);
}

TEST_CASE("DDP all-reduces an MoE model's expert gradients over the GPUs that hold the same experts only") {
  const model::ArchSpec arch = qwen3_moe();
  const auto buckets = [&](int dp) {
    model::Workload w = with_experts(test::train_workload(1, 2048, 2), kEp);
    w.data_parallel.degree = dp;
    w.data_parallel.member_stride = kTp;
    const model::LayerGraph g = model::build_layer_graph(arch, w, kTp, test::variant(model::TpMode::kSp));
    std::vector<model::Op> experts;
    for (const model::Op& op : g.ops()) {
      if (op.name.rfind("ddp.experts.", 0) == 0) experts.push_back(op);
    }
    return experts;
  };
  // tp 2 x dp 4 = 8 GPUs, one expert-parallel group of 8: each expert is on one GPU, nothing to reduce.
  CHECK(buckets(4).empty());
  // tp 2 x dp 8 = 16 GPUs: two expert-parallel groups, each expert on two GPUs 8 apart.
  const std::vector<model::Op> reduced = buckets(8);
  REQUIRE_FALSE(reduced.empty());
  double bytes = 0;
  for (const model::Op& op : reduced) {
    CHECK(op.group_size == 2);
    CHECK(op.group_stride == kEp);
    bytes += op.tensor_bytes;
  }
  const double experts_per_layer = 16.0 * 3 * arch.hidden * arch.moe.expert_ffn;
  CHECK(bytes == Approx(2 * 4.0 * experts_per_layer));  // two layers' fp32 gradients
}

TEST_CASE("parallelism.ep and the moe section are refused where they cannot apply, with what is valid") {
  const std::string valid = R"(name: t
model: qwen3-30b-a3b
hardware: {gpu: h100-sxm, topology: nvswitch}
workload: {phase: train, batch: 1, seq_len: 2048, layers: 2}
parallelism: {tp: 2, dp: 4, ep: 8}
moe: {routing: zipf, zipf_s: 1.0}
variants:
  - {name: sp, tp_mode: sp}
)";
  const auto replace = [&](const std::string& from, const std::string& to) {
    std::string text = valid;
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
  };
  const model::Scenario s = model::parse_scenario(valid, "s.yaml");
  CHECK(s.workload.expert_parallel.degree == 8);
  CHECK(s.workload.expert_parallel.routing == model::Routing::kZipf);
  struct Refused {
    const char* from;
    const char* to;
    const char* where;  // file:line: of the key
    const char* why;
  };
  const Refused cases[] = {
      {"qwen3-30b-a3b", "llama-3.1-8b", "s.yaml:5:", "splits an MoE model's experts"},
      {"ep: 8", "ep: 3", "s.yaml:5:", "must divide the 128 experts"},
      {"tp: 2, dp: 4, ep: 8", "tp: 4, dp: 2, ep: 2", "s.yaml:5:", "must be 1 or a multiple of tp (4)"},
      {"dp: 4, ep: 8", "dp: 2, ep: 8", "s.yaml:5:", "must divide tp x dp = 4"},
      {"tp_mode: sp", "tp_mode: tp", "s.yaml:8:", "needs sp, async or nocomm"},
      {"zipf_s: 1.0", "seed: 3", "s.yaml:6:", "needs zipf_s"},
      {"{routing: zipf, zipf_s: 1.0}", "{capacity_factor: 1.5}", "s.yaml:6:", "only with drop: true"},
      {"{routing: zipf, zipf_s: 1.0}", "{drop: true}", "s.yaml:6:", "needs capacity_factor"},
      {"{routing: zipf, zipf_s: 1.0}", "{zipf_s: 1.0}", "s.yaml:6:", "applies to routing: zipf only"},
      {"layers: 2}", "layers: 2, dtype: fp8, fp8_recipe: rowwise}", "s.yaml:4:", "fp8 training of an MoE model"},
      {"moe:", "fsdp: {shard_degree: 2}\nmoe:", "s.yaml:6:", "(hybrid sharding) of an MoE model is not modelled"},
      {"{routing: zipf, zipf_s: 1.0}", "{routing: from_file}", "s.yaml:6:", "needs file"},
      {"zipf_s: 1.0}", "zipf_s: 1.0, file: r.csv}", "s.yaml:6:", "applies to routing: from_file only"},
      {"{routing: zipf, zipf_s: 1.0}", "{routing: from_file, file: no/such.csv}", "s.yaml:6:", "moe.file:"},
  };
  for (const Refused& c : cases) {
    INFO(c.to);
    CHECK_THROWS_WITH(model::parse_scenario(replace(c.from, c.to), "s.yaml"), Contains(c.where) && Contains(c.why));
  }
}

TEST_CASE(
    "simulated, an all-to-all takes NCCL's call latency, one step and the busiest GPU's bytes through its "
    "NVLink port") {
  const model::ArchSpec arch = qwen3_moe();
  const sim::CostModel cost = test::h100_cost();
  const auto dispatch_seconds = [&](const model::Workload& w) {
    const model::LayerGraph g = model::build_layer_graph(arch, w, 1, test::variant(model::TpMode::kSp));
    const model::Op& op = op_named(g, "L0.moe.dispatch");
    const sim::Timeline timeline = sim::simulate(g, cost);
    for (const sim::OpSpan& span : timeline.spans) {
      if (g.op(span.op).name == op.name && span.rank == 0) return std::pair{span.end_s - span.start_s, op.tensor_bytes};
    }
    FAIL("no span of the dispatch");
    return std::pair{0.0, 0.0};
  };
  const sim::TransportParams& nccl = cost.profile().nccl;
  for (const model::Workload& w : {with_experts(test::forward_workload(1, 4096, 1), kEp),
                                   with_experts(test::forward_workload(1, 4096, 1), kEp, zipf(1.0))}) {
    const auto [seconds, tensor_bytes] = dispatch_seconds(w);
    const double wire = tensor_bytes * (kEp - 1) / kEp;  // 1/ep of the busiest GPU's copies to each other member
    INFO("tensor bytes " << tensor_bytes);
    CHECK(seconds == Approx(cost.profile().nccl_call_latency_s + nccl.step_latency_s +
                            wire / (cost.port_Bps() * nccl.link_efficiency))
                         .epsilon(1e-6));  // SimGrid settles a flow's end to about 1e-7 of its time
  }
}

TEST_CASE("selective recomputation re-runs an MoE layer's all-to-alls unless the save list keeps all_to_all") {
  const model::ArchSpec arch = qwen3_moe();
  const auto recomputed_all_to_alls = [&](bool keep) {
    model::Workload w = with_experts(test::train_workload(1, 2048, 2, model::Recompute::kSelective), kEp);
    w.save.all_to_all = keep;
    const model::LayerGraph g = model::build_layer_graph(arch, w, kTp, test::variant(model::TpMode::kSp));
    int count = 0;
    for (const model::Op& op : g.ops()) {
      count += op.stage == OpStage::kRecompute && op.kind == OpKind::kCollective &&
               op.collective == model::CollectiveKind::kAllToAll;
    }
    return count;
  };
  // The gate/up weight gradient reads the dispatch's output, the un-permutation's backward the combine's.
  CHECK(recomputed_all_to_alls(false) == 2 * 2);
  CHECK(recomputed_all_to_alls(true) == 0);
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

TEST_CASE("a decode step's grouped GEMMs run, and read the weights of, only the experts that receive copies") {
  const model::ArchSpec arch = qwen3_moe();
  // 4 sequences on each of 8 GPUs (tp 1): 32 tokens, 8 of the 128 experts each. An expert misses a token with
  // probability 1 - 8/128, so it is idle with probability (120/128)^32; each GPU holds 16.
  const auto w = with_experts(test::decode_workload(4, 1024, 1), kEp);
  const model::LayerGraph g = model::build_layer_graph(arch, w, 1, test::variant(model::TpMode::kSp));
  const double active = 16.0 * (1.0 - std::pow(120.0 / 128.0, 32));
  const model::Op& gate_up = op_named(g, "L0.moe.experts.gate_up_proj");
  CHECK(gate_up.gemm.groups == static_cast<int64_t>(std::ceil(active)));  // 13.97: 14 problems
  CHECK(gate_up.gemm.groups == 14);
  const double weights = 14.0 * arch.hidden * 2 * arch.moe.expert_ffn * 2.0;
  CHECK(gate_up.bytes_read == Approx(weights + 32.0 * arch.hidden * 2.0).epsilon(1e-12));
  // A training batch leaves none idle.
  const model::LayerGraph train = model::build_layer_graph(arch, with_experts(test::forward_workload(1, 2048, 1), kEp),
                                                           1, test::variant(model::TpMode::kSp));
  CHECK(op_named(train, "L0.moe.experts.gate_up_proj").gemm.groups == 16);
}

TEST_CASE(
    "under expert TP (ep 1) every GPU computes its slice of every expert on every token, and one reduction sums "
    "them") {
  const model::ArchSpec arch = model::load_model_preset("qwen3-next-80b-a3b");
  constexpr int tp = 4;
  const model::TpShard shard = model::shard_for_tp(arch, tp, 1);
  CHECK(shard.expert_tp);
  CHECK(shard.experts == 512);
  CHECK(shard.expert_ffn == 512 / tp);
  // Decode, tp mode: every rank routes all 8 tokens (no all-to-all), its grouped GEMMs over the 80 copies of the
  // experts that get any (512 x (1 - (1 - 10/512)^8) = 74.9: 75 problems), each a quarter wide.
  model::Workload w = test::decode_workload(8, 2000, 1);
  const model::LayerGraph g = model::build_layer_graph(arch, w, tp, test::variant(model::TpMode::kTp));
  const model::Op& gate_up = op_named(g, "L0.moe.experts.gate_up_proj");
  CHECK(gate_up.gemm.m == 8 * 10);
  CHECK(gate_up.gemm.n == 2 * 512 / tp);
  CHECK(gate_up.gemm.groups == static_cast<int64_t>(std::ceil(512.0 * (1 - std::pow(1 - 10.0 / 512, 8)))));
  CHECK(op_named(g, "L0.moe.experts.down_proj").gemm.k == 512 / tp);
  CHECK(op_named(g, "L0.moe.shared_expert.gate_up_proj").gemm.n == 2 * 512 / tp);
  const auto& ops = g.ops();
  CHECK(std::none_of(ops.begin(), ops.end(), [](const model::Op& op) { return op.name == "L0.moe.dispatch"; }));
  // The routed and shared partial sums are reduced together, once.
  const model::Op& reduce = op_named(g, "L0.moe.experts.all_reduce");
  CHECK(reduce.tensor_bytes == 8.0 * arch.hidden * 2.0);
  CHECK(std::any_of(reduce.deps.begin(), reduce.deps.end(),
                    [&](const model::Dep& dep) { return g.op(dep.op).name == "L0.moe.shared_expert.residual"; }));
  // Training under sp: the router's gathered input, the gradient gathered before the experts' backward and the input
  // gradient reduce-scattered after the router's data gradient.
  model::Workload train = test::train_workload(1, 2048, 1);
  const model::LayerGraph t =
      model::build_layer_graph(model::load_model_preset("qwen3-30b-a3b"), train, 2, test::variant(model::TpMode::kSp));
  CHECK(op_named(t, "L0.moe.router").gemm.m == 2048);
  CHECK(op_named(t, "L0.moe.experts.reduce_scatter").collective == model::CollectiveKind::kReduceScatter);
  CHECK(op_named(t, "L0.moe.experts.backward.all_gather").collective == model::CollectiveKind::kAllGather);
  CHECK(op_named(t, "L0.moe.router.dgrad.reduce_scatter").collective == model::CollectiveKind::kReduceScatter);
  // Its expert slices sync with the data-parallel group like dense parameters: no expert buckets.
  CHECK(model::expert_parameters_at(arch, shard, 0) == 0);
}

TEST_CASE("expert TP runs under tp, sp, async and nocomm, and dtp around it is refused at the variant") {
  const std::string text = R"(name: t
model: qwen3-30b-a3b
hardware: {gpu: h100-sxm, topology: nvswitch}
workload: {phase: decode, batch: 8, context_len: 1024, layers: 2}
parallelism: {tp: 4, ep: 1}
variants:
  - {name: tp, tp_mode: tp}
  - {name: sp, tp_mode: sp}
)";
  CHECK_NOTHROW(model::parse_scenario(text, "s.yaml"));
  std::string dtp = text;
  dtp.replace(dtp.find("tp_mode: sp"), 11, "tp_mode: dtp, delta: 1");
  CHECK_THROWS_WITH(model::parse_scenario(dtp, "s.yaml"),
                    Contains("s.yaml:8:") && Contains("dtp around an MoE layer is not modelled"));
}

TEST_CASE("two_batch_overlap is refused at its key without experts to exchange, an even batch, or with recomputation") {
  const std::string valid = R"(name: t
model: qwen3-30b-a3b
hardware: {gpu: h100-sxm, topology: nvswitch}
workload: {phase: decode, batch: 16, context_len: 1024, layers: 2}
parallelism: {tp: 2, ep: 8}
variants:
  - {name: sp, tp_mode: sp, two_batch_overlap: true}
)";
  CHECK(model::parse_scenario(valid, "s.yaml").variants[0].two_batch_overlap);
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string text = valid;
    return text.replace(text.find(from), from.size(), to);
  };
  const std::string odd = with("tp_mode: sp", "tp_mode: nocomm");  // nocomm runs any batch
  const std::pair<std::string, std::string> cases[] = {
      {"batch: 16", "batch: 2"},
      {"ep: 8", "ep: 1"},
      {"phase: decode, batch: 16, context_len: 1024", "phase: train, batch: 16, seq_len: 1024, recompute: full"}};
  const char* why[] = {"must divide by tp=2", "parallelism.ep > 1", "without recomputation"};
  std::string train = with("phase: decode, batch: 16, context_len: 1024", "phase: train, batch: 16, seq_len: 1024");
  train.replace(train.find("tp: 2, ep: 8"), 12, "tp: 2, dp: 4, ep: 8");
  CHECK(model::parse_scenario(train, "s.yaml").variants[0].two_batch_overlap);
  for (size_t i = 0; i < 3; ++i) {
    INFO(cases[i].second);
    CHECK_THROWS_WITH(model::parse_scenario(with(cases[i].first, cases[i].second), "s.yaml"),
                      Contains("s.yaml:7:") && Contains(why[i]));
  }
  std::string odd_batch = odd;
  odd_batch.replace(odd_batch.find("batch: 16"), 9, "batch: 15");
  CHECK_THROWS_WITH(model::parse_scenario(odd_batch, "s.yaml"), Contains("s.yaml:7:") && Contains("must be even"));
}

TEST_CASE("under DeepEP a GPU receives each token once, and across nodes a token crosses once per destination node") {
  const model::ArchSpec arch = qwen3_moe();
  model::ExpertParallel ep;
  ep.dispatcher = model::Dispatcher::kDeepEp;
  ep.node_gpus = 8;
  const auto w = with_experts(test::forward_workload(2, 4096, 1), 16, ep);
  const model::LayerGraph g = model::build_layer_graph(arch, w, 2, test::variant(model::TpMode::kSp));
  const model::Op& dispatch = op_named(g, "L0.moe.dispatch");
  CHECK(dispatch.algorithm == model::CollectiveAlgorithm::kDeepEp);
  // 4096 rows per GPU, 16 GPUs of 8 experts each, 2 nodes of 64; a token's 8 distinct experts of 128 miss a set of e
  // experts with probability C(128 - e, 8) / C(128, 8).
  const auto miss = [](int held) {
    double p = 1;
    for (int j = 0; j < 8; ++j) p *= static_cast<double>(128 - held - j) / (128 - j);
    return p;
  };
  const double row = 2048 * 2.0, group_tokens = 16 * 4096.0;
  CHECK(dispatch.tensor_bytes == Approx(group_tokens * (1 - miss(8)) * row).epsilon(1e-12));
  CHECK(dispatch.message_bytes == Approx(4096 * 2 * (1 - miss(64)) * row).epsilon(1e-12));
  // Inside one node nothing crosses the network.
  model::ExpertParallel one_node = ep;
  one_node.node_gpus = 16;
  const model::LayerGraph inside = model::build_layer_graph(
      arch, with_experts(test::forward_workload(2, 4096, 1), 16, one_node), 2, test::variant(model::TpMode::kSp));
  CHECK(op_named(inside, "L0.moe.dispatch").message_bytes == 0);
}

TEST_CASE("moe.dispatcher takes nccl or deepep, refused at the key otherwise or without an expert-parallel group") {
  const std::string text = R"(name: t
model: qwen3-30b-a3b
hardware: {gpu: h100-sxm, topology: nvswitch}
workload: {phase: train, batch: 1, seq_len: 2048, layers: 1}
parallelism: {tp: 2, dp: 4, ep: 8}
moe: {dispatcher: deepep}
variants:
  - {name: sp, tp_mode: sp}
)";
  CHECK(model::parse_scenario(text, "s.yaml").workload.expert_parallel.dispatcher == model::Dispatcher::kDeepEp);
  std::string bad = text;
  bad.replace(bad.find("deepep}"), 6, "deepx");
  CHECK_THROWS_WITH(model::parse_scenario(bad, "s.yaml"), Contains("s.yaml:6:") && Contains("nccl, deepep"));
  std::string no_exchange = text;
  no_exchange.replace(no_exchange.find("ep: 8"), 5, "ep: 1");
  CHECK_THROWS_WITH(model::parse_scenario(no_exchange, "s.yaml"),
                    Contains("s.yaml:6:") && Contains("with parallelism.ep 1 there are none"));
}

TEST_CASE("a mixed stack runs the dense FFN in its dense layers and the MoE FFN in the rest, and syncs each its own") {
  model::ArchSpec arch = qwen3_moe();
  arch.moe.dense_layers = {true, false};  // layer 0 dense (intermediate_size 6144), layer 1 an MoE
  const model::TpShard s = model::shard_for_tp(arch, kTp, kEp);
  CHECK(s.ffn == arch.intermediate / kTp);
  model::Workload w = with_experts(test::train_workload(1, 2048, 2), kEp);
  w.data_parallel.degree = 8;
  w.data_parallel.member_stride = kTp;
  const model::LayerGraph g = model::build_layer_graph(arch, w, kTp, test::variant(model::TpMode::kSp));
  const model::Op& gate_up = op_named(g, "L0.ffn.gate_up_proj");
  CHECK(gate_up.gemm.n == 2 * arch.intermediate / kTp);
  CHECK(op_named(g, "L1.moe.router").kind == OpKind::kGemm);
  for (const model::Op& op : g.ops()) {
    INFO(op.name);
    CHECK(op.name.rfind("L0.moe.", 0) == std::string::npos);
    CHECK(op.name.rfind("L1.ffn.gate_up_proj", 0) == std::string::npos);
  }
  // Only layer 1's experts reduce over the expert-data-parallel group: 16 local experts' fp32 gradients.
  double expert_bytes = 0;
  for (const model::Op& op : g.ops()) {
    if (op.name.rfind("ddp.experts.", 0) == 0) expert_bytes += op.tensor_bytes;
  }
  CHECK(expert_bytes == Approx(4.0 * 16.0 * 3 * arch.hidden * arch.moe.expert_ffn));
  CHECK(model::expert_parameters_at(arch, s, 0) == 0);
  // The two layers' parameters: a dense SwiGLU of 3 x hidden x ffn per rank in one, the router and 16 experts in
  // the other, beside the same attention.
  const double h = static_cast<double>(arch.hidden);
  const double dense_ffn = 3.0 * h * static_cast<double>(s.ffn);
  const double moe_ffn = h * 128.0 + 16.0 * 3.0 * h * static_cast<double>(arch.moe.expert_ffn);
  CHECK(model::layer_parameters_at(arch, s, 1) - model::layer_parameters_at(arch, s, 0) == Approx(moe_ffn - dense_ffn));
  CHECK(model::layer_parameters_per_rank(arch, s, {0, 2}) ==
        Approx(model::layer_parameters_at(arch, s, 0) + model::layer_parameters_at(arch, s, 1)));
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

TEST_CASE("an fp8 MoE decode step streams e4m3 expert weights, its grouped GEMMs at the fp8 rate") {
  const std::string text = R"(name: t
model: qwen3-30b-a3b
hardware: {gpu: h200-sxm, topology: nvswitch, nodes: 1}
workload: {phase: decode, batch: 64, context_len: 2048, layers: 2, dtype: DTYPE}
parallelism: {tp: 2, ep: 1}
variants: [{name: tp, tp_mode: tp}]
)";
  const auto grouped = [&](const std::string& dtype) {
    std::string yaml = text;
    yaml.replace(yaml.find("DTYPE"), 5, dtype);
    const sim::ScenarioRun run = sim::run_scenario(model::parse_scenario(yaml, "t.yaml"));
    return run.variants.front().metrics.time_s;
  };
  // Half the weight bytes to stream: the fp8 step is faster, and well short of half the time (attention and the
  // KV cache stay bf16).
  const double bf16 = grouped("bf16"), fp8 = grouped("fp8");
  CHECK(fp8 < bf16);
  CHECK(fp8 > 0.5 * bf16);
  const model::ArchSpec arch = qwen3_moe();
  model::Workload w = test::decode_workload(64, 2048, 1);
  w.dtype = model::Dtype::kFp8;
  const model::LayerGraph g = model::build_layer_graph(arch, w, 2, test::variant(model::TpMode::kTp));
  const model::Op& gate_up = op_named(g, "L0.moe.experts.gate_up_proj");
  CHECK(gate_up.fp8);
  CHECK(gate_up.gemm.groups > 1);
}

namespace {

// Qwen3-30B-A3B over EP 16 on two nodes of 8 (tp 1), DeepEP in `mode`, one layer of `phase`.
model::LayerGraph deepep_graph(model::DeepEpMode mode, model::Workload w) {
  model::ExpertParallel ep;
  ep.dispatcher = model::Dispatcher::kDeepEp;
  ep.deepep_mode = mode;
  ep.node_gpus = 8;
  return model::build_layer_graph(qwen3_moe(), with_experts(std::move(w), 16, ep), 1,
                                  test::variant(model::TpMode::kTp));
}

}  // namespace

TEST_CASE("DeepEP's low-latency kernels send one message per copy in decode, its normal kernels the prefill") {
  const model::LayerGraph decode = deepep_graph(model::DeepEpMode::kAuto, test::decode_workload(32, 2048, 1));
  const model::Op& dispatch = op_named(decode, "L0.moe.dispatch");
  CHECK(dispatch.algorithm == model::CollectiveAlgorithm::kDeepEpLowLatencyDispatch);
  // 32 tokens x 8 copies (balanced: the busiest GPU receives as many), each an fp8 row of 2048 with its 16 scales
  // and a 16-byte header; half of the group on the other node.
  const double copies = 32 * 8, message = 2048 + 2048 / 128 * 4 + 16;
  CHECK(dispatch.tensor_bytes == Approx(copies * message));
  CHECK(dispatch.message_bytes == Approx(copies * message / 2));
  const model::Op& combine = op_named(decode, "L0.moe.combine");
  CHECK(combine.algorithm == model::CollectiveAlgorithm::kDeepEpLowLatencyCombine);
  CHECK(combine.tensor_bytes == Approx(copies * 2048 * 2.0));
  // The kernels permute the copies into their experts' buffers and sum them back: no permutation ops around them.
  for (const char* name : {"L0.moe.permute", "L0.moe.sort", "L0.moe.unsort", "L0.moe.unpermute"}) {
    for (const model::Op& op : decode.ops()) CHECK(op.name != name);
  }
  // A prefill runs the normal kernels and their permutations.
  model::Workload prefill = test::forward_workload(2, 1024, 1);
  prefill.phase = model::Phase::kPrefill;
  const model::LayerGraph normal = deepep_graph(model::DeepEpMode::kAuto, prefill);
  CHECK(op_named(normal, "L0.moe.dispatch").algorithm == model::CollectiveAlgorithm::kDeepEp);
  CHECK(op_named(normal, "L0.moe.permute").kind == OpKind::kMemory);
  // deepep_mode forces either kind.
  CHECK(op_named(deepep_graph(model::DeepEpMode::kNormal, test::decode_workload(32, 2048, 1)), "L0.moe.dispatch")
            .algorithm == model::CollectiveAlgorithm::kDeepEp);
  CHECK(op_named(deepep_graph(model::DeepEpMode::kLowLatency, prefill), "L0.moe.dispatch").algorithm ==
        model::CollectiveAlgorithm::kDeepEpLowLatencyDispatch);
}

TEST_CASE("a low-latency dispatch takes its floor plus the slower of its NVLink and its network bytes") {
  const model::LayerGraph g = deepep_graph(model::DeepEpMode::kAuto, test::decode_workload(32, 2048, 1));
  const model::Op& op = op_named(g, "L0.moe.dispatch");
  const sim::GpuSpec gpu = test::gpu_preset("h200-sxm");
  const sim::CostModel cost(gpu, test::profile_preset("h200-sxm"),
                            sim::resolve_fabric(sim::FabricRequest{"ib-rail", 2}, gpu));
  const sim::DeepEpLowLatencyParams& l = *cost.profile().deepep->low_latency;
  const sim::CommPlan plan = sim::plan_deepep(op, cost);
  const double nvlink_s = op.tensor_bytes / (cost.port_Bps() * l.dispatch_nvlink_efficiency);
  const double network_s = op.message_bytes / (cost.fabric().nic_Bps * l.rdma_efficiency);
  REQUIRE(plan.outside);
  CHECK(plan.outside->latency_s == Approx(l.rdma_latency_s));  // bytes cross nodes: the RDMA floor
  CHECK(plan.outside->network == (network_s > nvlink_s));
  const double link_Bps = plan.outside->network ? cost.fabric().nic_Bps : cost.port_Bps();
  CHECK(plan.outside->link_bytes / link_Bps == Approx(std::max(nvlink_s, network_s)));
}

TEST_CASE("moe.deepep_mode is refused without DeepEP, and low_latency in training") {
  const std::string text = R"(name: t
model: qwen3-30b-a3b
hardware: {gpu: h100-sxm, topology: nvswitch, nodes: 1}
workload: {phase: train, batch: 1, seq_len: 2048, layers: 2}
parallelism: {tp: 2, dp: 4, ep: 8}
moe: {dispatcher: deepep, deepep_mode: low_latency}
variants: [{name: sp, tp_mode: sp}]
)";
  CHECK_THROWS_WITH(model::parse_scenario(text, "s.yaml"), Contains("s.yaml:6:") && Contains("have no backward"));
  std::string nccl = text;
  nccl.replace(nccl.find("dispatcher: deepep"), 18, "dispatcher: nccl");
  CHECK_THROWS_WITH(model::parse_scenario(nccl, "s.yaml"), Contains("applies to dispatcher: deepep only"));
  std::string bad = text;
  bad.replace(bad.find("low_latency}"), 12, "fast}");
  CHECK_THROWS_WITH(model::parse_scenario(bad, "s.yaml"), Contains("auto, normal, low_latency"));
}

TEST_CASE("two-batch overlap in training interleaves each layer's MoE stages of two half micro-batches, both ways") {
  model::Workload w = with_experts(test::train_workload(4, 1024, 2), kEp);
  model::Variant v = test::variant(model::TpMode::kSp);
  v.two_batch_overlap = true;
  const model::LayerGraph g = model::build_layer_graph(qwen3_moe(), w, kTp, v);
  // An op's place in issue order.
  const auto id = [&](const std::string& name) {
    const auto& ops = g.ops();
    const auto at = std::find_if(ops.begin(), ops.end(), [&](const model::Op& op) { return op.name == name; });
    REQUIRE(at != ops.end());
    return at - ops.begin();
  };
  // Forward: both halves' dispatches before either's experts; half 0's combine all-to-all issued before half 1's
  // experts (it runs beside them), both before either's un-permutation.
  CHECK(id("half0.L1.moe.dispatch") < id("half1.L1.moe.dispatch"));
  CHECK(id("half1.L1.moe.dispatch") < id("half0.L1.moe.experts.gate_up_proj"));
  CHECK(id("half0.L1.moe.combine") < id("half1.L1.moe.experts.gate_up_proj"));
  CHECK(id("half1.L1.moe.combine") < id("half0.L1.moe.unpermute"));
  // Backward, mirrored: both combines' backward before either's expert gradients, half 0's dispatch backward
  // before half 1's expert gradients, both before either's router gradient.
  CHECK(id("half0.L1.moe.combine.backward") < id("half1.L1.moe.combine.backward"));
  CHECK(id("half1.L1.moe.combine.backward") < id("half0.L1.moe.experts.down_proj.dgrad"));
  CHECK(id("half0.L1.moe.dispatch.backward") < id("half1.L1.moe.experts.down_proj.dgrad"));
  CHECK(id("half1.L1.moe.dispatch.backward") < id("half0.L1.moe.router.dgrad"));
  // Each half routes its 2 sequences' rows (sharded over tp): half the copies of the whole micro-batch.
  const model::Op& half_permute = op_named(g, "half0.L0.moe.permute");
  model::Variant whole = test::variant(model::TpMode::kSp);
  const model::LayerGraph g1 = model::build_layer_graph(qwen3_moe(), w, kTp, whole);
  CHECK(half_permute.bytes_written == Approx(op_named(g1, "L0.moe.permute").bytes_written / 2));
  // The step's FLOPs are the whole micro-batch's.
  double flops = 0, whole_flops = 0;
  for (const model::Op& op : g.ops()) flops += op.flops;
  for (const model::Op& op : g1.ops()) whole_flops += op.flops;
  CHECK(flops == Approx(whole_flops).epsilon(0.01));
}

TEST_CASE("expert TP inside the group slices each expert over etp GPUs, gathering and scattering the slice's rows") {
  // Qwen3-30B-A3B, tp 2 x dp 8, experts over EP 8 with each sliced over 2 GPUs: 16 experts per GPU, half of each.
  const model::ArchSpec arch = qwen3_moe();
  model::Workload w = with_experts(test::train_workload(2, 2048, 1), 8);
  w.expert_parallel.tensor_degree = 2;
  w.data_parallel.degree = 8;
  w.data_parallel.member_stride = kTp;
  const model::LayerGraph g = model::build_layer_graph(arch, w, kTp, test::variant(model::TpMode::kSp));
  const double rank_copies = 2.0 * 2048 / kTp * 8, row = 2048 * 2.0;  // a rank's rows x 8 experts, bf16
  // The all-to-all between the GPUs of the same slice (2 apart), each its own copies; then the slice's two GPUs
  // gather each other's.
  const model::Op& dispatch = op_named(g, "L0.moe.dispatch");
  CHECK(dispatch.group_size == 8);
  CHECK(dispatch.group_stride == 2);
  CHECK(dispatch.tensor_bytes == Approx(rank_copies * row));
  const model::Op& gather = op_named(g, "L0.moe.etp.all_gather");
  CHECK(gather.collective == model::CollectiveKind::kAllGather);
  CHECK(gather.group_size == 2);
  CHECK(gather.group_stride == 1);
  CHECK(gather.tensor_bytes == Approx(2 * rank_copies * row));
  // The grouped GEMMs run the slice's rows at half the expert width; a reduce-scatter returns each GPU's share.
  const model::Op& gate_up = op_named(g, "L0.moe.experts.gate_up_proj");
  CHECK(gate_up.gemm.m == static_cast<int64_t>(2 * rank_copies));
  CHECK(gate_up.gemm.n == 2 * arch.moe.expert_ffn / 2);
  CHECK(op_named(g, "L0.moe.etp.reduce_scatter").collective == model::CollectiveKind::kReduceScatter);
  // The backward swaps them: the combine's gradient gathered, the dispatch's reduce-scattered.
  CHECK(op_named(g, "L0.moe.etp.reduce_scatter.backward").collective == model::CollectiveKind::kAllGather);
  CHECK(op_named(g, "L0.moe.etp.all_gather.backward").collective == model::CollectiveKind::kReduceScatter);
  // 16 experts per GPU, half of each; tp x dp / (ep x etp) = 1 GPU holds each slice: nothing to reduce.
  const model::TpShard s = model::shard_for_tp(arch, kTp, 8, 2);
  CHECK(s.experts == 16);
  CHECK(s.expert_ffn == arch.moe.expert_ffn / 2);
  for (const model::Op& op : g.ops()) CHECK(op.name.rfind("ddp.experts.", 0) == std::string::npos);
}

TEST_CASE("parallelism.etp is refused without an expert-parallel group, or where it cannot split the experts") {
  const std::string valid = R"(name: t
model: qwen3-30b-a3b
hardware: {gpu: h100-sxm, topology: ib-rail, nodes: 2}
workload: {phase: train, batch: 2, seq_len: 1024, layers: 2}
parallelism: {tp: 2, dp: 8, ep: 8, etp: 2}
variants: [{name: sp, tp_mode: sp}]
)";
  CHECK(model::parse_scenario(valid, "s.yaml").workload.expert_parallel.tensor_degree == 2);
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string text = valid;
    return text.replace(text.find(from), from.size(), to);
  };
  CHECK_THROWS_WITH(model::parse_scenario(with("ep: 8, etp: 2", "ep: 1, etp: 2"), "s.yaml"),
                    Contains("s.yaml:5:") && Contains("inside an expert-parallel group"));
  CHECK_THROWS_WITH(model::parse_scenario(with("ep: 8, etp: 2", "ep: 8, etp: 5"), "s.yaml"),
                    Contains("etp must divide each expert's FFN width 768"));
  CHECK_THROWS_WITH(model::parse_scenario(with("ep: 8, etp: 2", "ep: 16, etp: 2"), "s.yaml"),
                    Contains("must divide tp x dp = 16"));
  CHECK_THROWS_WITH(model::parse_scenario(with("variants:", "moe: {dispatcher: deepep}\nvariants:"), "s.yaml"),
                    Contains("with parallelism.etp > 1"));
}
