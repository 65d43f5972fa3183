// Expert parallelism's gradient groups and parameters (expert and mixed dense/MoE stacks), and the scenario rules of
// parallelism.ep, parallelism.etp, the moe section and two-batch overlap.
#include <catch2/catch.hpp>

#include "model/graph/graph_builder.hpp"
#include "model/memory/parameter_count.hpp"
#include "model/scenario.hpp"
#include "moe_support.hpp"
#include "test_support.hpp"

using namespace tpsim;
using namespace tpsim::test::moe;
using Catch::Matchers::Contains;
using model::OpKind;
using test::op_named;

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
