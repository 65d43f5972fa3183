// Context parallelism's program: the zig-zag split's load balance, the ring's K/V exchanges, the other comm types,
// the gradient reduction over dp x cp, activation memory over cp, and the scenario keys and their refusals.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "base/input_error.hpp"
#include "model/memory/activation_memory.hpp"
#include "model/memory/memory_footprint.hpp"
#include "model/parallel/context_parallel.hpp"
#include "model/scenario.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::CollectiveKind;
using model::OpKind;
using model::OpStage;

namespace {

// Llama-3.1-8B: 32 query and 8 K/V heads of 128; one layer, TP 8 under sp.
constexpr int kTp = 8;
constexpr double kHeadDim = 128, kQueryHeadsPerRank = 32.0 / kTp, kKvHeadsPerRank = 8.0 / kTp;

model::Workload cp_workload(int64_t batch, int64_t seq_len, int cp, model::CpCommType comm = model::CpCommType::kP2p) {
  return test::cp_workload(batch, seq_len, cp, comm, kTp);
}

model::LayerGraph cp_graph(const model::Workload& w) {
  return test::llama8b_sp_graph(w, kTp);
}

// The layer's ops over the CP group (its K/V exchanges), in issue order, of one stage.
std::vector<model::Op> cp_exchanges(const model::LayerGraph& g, OpStage stage) {
  std::vector<model::Op> out;
  for (const model::Op& op : g.ops()) {
    if (op.kind == OpKind::kCollective && op.stage == stage && op.name.find(".cp.") != std::string::npos) {
      out.push_back(op);
    }
  }
  return out;
}

double attention_flops(const model::LayerGraph& g, OpStage stage) {
  double total = 0;
  for (const model::Op& op : g.ops()) {
    if (op.kind == OpKind::kAttention && op.stage == stage) total += op.flops;
  }
  return total;
}

double sum_of_data_bytes(const model::LayerGraph& g, CollectiveKind kind, int* group_size, int* stride) {
  double total = 0;
  for (const model::Op& op : g.ops()) {
    if (op.kind != OpKind::kCollective || op.group != model::CommGroup::kData || op.collective != kind) continue;
    if (op.name.find(".cp.") != std::string::npos) continue;
    total += op.tensor_bytes;
    *group_size = op.group_size;
    *stride = op.group_stride;
  }
  return total;
}

std::string scenario_text(const std::string& parallelism, const std::string& extra = "", int64_t seq_len = 8192,
                          const std::string& phase = "train") {
  return "model: llama-3.1-8b\nhardware: {gpu: h100-sxm, topology: ib-rail, nodes: 4}\nworkload: {phase: " + phase +
         ", batch: 1, seq_len: " + std::to_string(seq_len) + ", layers: 2}\nparallelism: " + parallelism + "\n" +
         extra + "variants: [{name: sp, tp_mode: sp}]\n";
}

}  // namespace

TEST_CASE("under the zig-zag split every CP rank computes the same causal attention, 1/cp of the sequence's") {
  const int64_t seq = 65536;
  const double whole = static_cast<double>(seq) * static_cast<double>(seq) / 2.0;  // causal pairs, q^2 / 2
  for (const int cp : {2, 4, 8}) {
    for (int rank = 0; rank < cp; ++rank) {
      double zigzag = 0, contiguous = 0;
      for (int step = 0; step < cp; ++step) {
        zigzag += model::zigzag_pairs(seq, cp, rank, step);
        contiguous += model::contiguous_pairs(seq, cp, rank, step);
      }
      INFO("cp " << cp << " rank " << rank);
      CHECK(zigzag == Approx(whole / cp).epsilon(1e-12));
      // A contiguous split gives rank r (r + 1/2) blocks of (S / cp)^2: the last 2 cp - 1 times the first's work.
      const double block = static_cast<double>(seq) / cp;
      CHECK(contiguous == Approx((rank + 0.5) * block * block).epsilon(1e-12));
    }
    // Every ring step is the same work on every rank too: one chunk against two (2 c^2 pairs, c = S / 2cp) but the
    // local step, whose two chunks see themselves causally and the later one the earlier fully (also 2 c^2).
    const double c = static_cast<double>(seq) / (2.0 * cp);
    for (int rank = 0; rank < cp; ++rank) {
      for (int step = 0; step < cp; ++step) CHECK(model::zigzag_pairs(seq, cp, rank, step) == Approx(2 * c * c));
    }
  }
}

TEST_CASE("a CP rank's attention blocks do its zig-zag share of the layer's causal FLOPs, forward and backward") {
  const int64_t batch = 2, seq = 16384;
  const model::LayerGraph whole = cp_graph(test::train_workload(batch, seq, 1));
  for (const int cp : {2, 4}) {
    const model::LayerGraph g = cp_graph(cp_workload(batch, seq, cp));
    // 4 b hq d per query-key pair, S^2 / 2 pairs over the sequence, 1/cp of them here.
    const double expected = 4.0 * batch * kQueryHeadsPerRank * kHeadDim * (seq * double(seq) / 2.0) / cp;
    CHECK(attention_flops(g, OpStage::kForward) == Approx(expected).epsilon(1e-12));
    CHECK(attention_flops(g, OpStage::kForward) == Approx(attention_flops(whole, OpStage::kForward) / cp));
    CHECK(attention_flops(g, OpStage::kBackward) == Approx(2.5 * expected).epsilon(1e-12));
    int blocks = 0;
    for (const model::Op& op : g.ops()) blocks += op.kind == OpKind::kAttention && op.stage == OpStage::kForward;
    CHECK(blocks == cp);
  }
}

TEST_CASE(
    "a causal square of L tokens marks its diagonal as 1/L, a CP ring's own-chunk step as a square of S/cp and its "
    "other steps not at all, the gathered and head-split forms as the whole sequence") {
  const int64_t seq = 16384;
  const auto inverse_lengths = [](const model::LayerGraph& g, OpStage stage) {
    std::vector<double> out;
    for (const model::Op& op : g.ops()) {
      if (op.kind == OpKind::kAttention && op.stage == stage) out.push_back(op.causal_inverse_length);
    }
    return out;
  };
  for (const OpStage stage : {OpStage::kForward, OpStage::kBackward}) {
    // Without CP: one causal square over the sequence.
    CHECK(inverse_lengths(cp_graph(test::train_workload(1, seq, 1)), stage) ==
          std::vector<double>{1.0 / static_cast<double>(seq)});
    const int cp = 4;
    // The ring's step 0: the rank's two chunks of S / 2cp, each a causal square of its own and the later one wholly
    // past the earlier: 2 c rows over twice 2 c^2 pairs, 1 / (2 c) = cp / S.
    // PyTorch's all-gather rotation runs the same blocks.
    for (const model::CpCommType comm : {model::CpCommType::kP2p, model::CpCommType::kTorchAllGather}) {
      const std::vector<double> ring = inverse_lengths(cp_graph(cp_workload(1, seq, cp, comm)), stage);
      REQUIRE(ring.size() == cp);
      CHECK(ring[0] == Approx(static_cast<double>(cp) / seq).epsilon(1e-12));
      for (size_t step = 1; step < ring.size(); ++step) CHECK(ring[step] == 0.0);
    }
    for (const model::CpCommType comm : {model::CpCommType::kAllGather, model::CpCommType::kA2a}) {
      const std::vector<double> whole = inverse_lengths(cp_graph(cp_workload(1, seq, cp, comm)), stage);
      REQUIRE(whole.size() == 1);
      CHECK(whole[0] == Approx(1.0 / seq).epsilon(1e-12));
    }
  }
}

TEST_CASE(
    "ring attention sends one rank's K and V at each of the forward's cp - 1 steps, K/V and dK/dV in the backward's "
    "cp") {
  const int64_t batch = 1, seq = 32768;
  const int cp = 4;
  const model::LayerGraph g = cp_graph(cp_workload(batch, seq, cp));
  // K and V of the rank's S / cp tokens, its TP rank's K/V head, bf16.
  const double kv = 2.0 * batch * (seq / cp) * kKvHeadsPerRank * kHeadDim * 2.0;
  const std::vector<model::Op> forward = cp_exchanges(g, OpStage::kForward);
  REQUIRE(forward.size() == cp - 1);
  for (const model::Op& op : forward) {
    CHECK(op.collective == CollectiveKind::kSendRecv);
    CHECK(op.tensor_bytes == Approx(kv));
    CHECK(op.group == model::CommGroup::kData);
    CHECK(op.group_size == cp);
    CHECK(op.group_stride == kTp);  // CP next to TP: member k of rank r is GPU r + k tp
    CHECK(op.stream == model::Stream::kComm2);
  }
  const std::vector<model::Op> backward = cp_exchanges(g, OpStage::kBackward);
  REQUIRE(backward.size() == cp);
  CHECK(backward.front().tensor_bytes == Approx(kv));  // K/V alone
  CHECK(backward[1].tensor_bytes == Approx(2 * kv));   // K/V and the dK/dV so far
  CHECK(backward[2].tensor_bytes == Approx(2 * kv));
  CHECK(backward.back().tensor_bytes == Approx(kv));  // dK/dV home
}

TEST_CASE("all_gather gathers K and V and reduce-scatters their gradients, and a2a moves Q, K, V and the output") {
  const int64_t batch = 1, seq = 16384;
  const int cp = 2;
  const double local = batch * (seq / cp) * kHeadDim * 2.0;  // one head of the rank's tokens, bf16
  const model::LayerGraph gather = cp_graph(cp_workload(batch, seq, cp, model::CpCommType::kAllGather));
  const std::vector<model::Op> f = cp_exchanges(gather, OpStage::kForward),
                               b = cp_exchanges(gather, OpStage::kBackward);
  REQUIRE(f.size() == 1);
  CHECK(f[0].collective == CollectiveKind::kAllGather);
  CHECK(f[0].tensor_bytes == Approx(cp * 2 * kKvHeadsPerRank * local));  // the gathered K and V
  REQUIRE(b.size() == 2);
  CHECK(b[0].collective == CollectiveKind::kAllGather);
  CHECK(b[1].collective == CollectiveKind::kReduceScatter);
  CHECK(b[1].tensor_bytes == Approx(f[0].tensor_bytes));
  const model::LayerGraph heads = cp_graph(cp_workload(batch, seq, cp, model::CpCommType::kA2a));
  const std::vector<model::Op> a = cp_exchanges(heads, OpStage::kForward);
  REQUIRE(a.size() == 2);
  CHECK(a[0].collective == CollectiveKind::kAllToAll);
  CHECK(a[0].tensor_bytes == Approx((kQueryHeadsPerRank + 2 * kKvHeadsPerRank) * local));
  CHECK(a[1].tensor_bytes == Approx(kQueryHeadsPerRank * local));
  CHECK(attention_flops(heads, OpStage::kForward) == Approx(attention_flops(gather, OpStage::kForward)));
}

TEST_CASE("parallelism.cp 1 builds the program it builds without the key") {
  const std::string extra = "fsdp: {}\n";
  const model::Scenario with = model::parse_scenario(scenario_text("{tp: 8, dp: 4, cp: 1}", extra), "a.yaml");
  const model::Scenario without = model::parse_scenario(scenario_text("{tp: 8, dp: 4}", extra), "b.yaml");
  const model::LayerGraph a = model::build_layer_graph(with.arch, with.workload, 8, with.variants[0]);
  const model::LayerGraph b = model::build_layer_graph(without.arch, without.workload, 8, without.variants[0]);
  REQUIRE(a.size() == b.size());
  for (model::OpId id = 0; id < a.size(); ++id) {
    INFO(a.op(id).name);
    CHECK(a.op(id).name == b.op(id).name);
    CHECK(a.op(id).flops == b.op(id).flops);
    CHECK(a.op(id).tensor_bytes == b.op(id).tensor_bytes);
    CHECK(a.op(id).group_size == b.op(id).group_size);
    CHECK(a.op(id).group_stride == b.op(id).group_stride);
  }
  CHECK(with.parallelism.pp_stride() == without.parallelism.pp_stride());
}

TEST_CASE("the gradients reduce over dp x cp: the same bytes per group as dp x cp replicas, tp GPUs apart") {
  const model::Scenario cp = model::parse_scenario(scenario_text("{tp: 8, dp: 2, cp: 2}"), "cp.yaml");
  const model::Scenario dp = model::parse_scenario(scenario_text("{tp: 8, dp: 4}"), "dp.yaml");
  CHECK(cp.workload.data_parallel.degree == 4);
  CHECK(cp.workload.data_parallel.member_stride == 8);
  int cp_size = 0, cp_stride = 0, dp_size = 0, dp_stride = 0;
  const double cp_bytes = sum_of_data_bytes(model::build_layer_graph(cp.arch, cp.workload, 8, cp.variants[0]),
                                            CollectiveKind::kAllReduce, &cp_size, &cp_stride);
  const double dp_bytes = sum_of_data_bytes(model::build_layer_graph(dp.arch, dp.workload, 8, dp.variants[0]),
                                            CollectiveKind::kAllReduce, &dp_size, &dp_stride);
  // DDP all-reduces every gradient element of the rank once per step, in fp32: the parameters the rank holds x 4.
  CHECK(cp_bytes > 0);
  CHECK(cp_bytes == Approx(dp_bytes).epsilon(1e-12));
  CHECK(cp_size == 4);
  CHECK(cp_stride == 8);
  CHECK(dp_size == 4);
  // FSDP shards over dp x cp too (TorchTitan's dp_shard_cp mesh).
  const model::Scenario fsdp = model::parse_scenario(scenario_text("{tp: 8, dp: 2, cp: 2}", "fsdp: {}\n"), "f.yaml");
  CHECK(fsdp.workload.data_parallel.shards() == 4);
}

TEST_CASE("a CP rank saves 1/cp of the activations and holds the ring's K/V buffers") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const model::Variant sp = test::variant(model::TpMode::kSp);
  const int64_t seq = 16384;
  model::Workload whole = test::train_workload(1, seq, 2);
  const model::SavedActivations one = model::saved_activations(model::build_layer_graph(arch, whole, kTp, sp));
  for (const int cp : {2, 4}) {
    model::Workload w = cp_workload(1, seq, cp);
    w.layers = 2;
    const model::SavedActivations split = model::saved_activations(model::build_layer_graph(arch, w, kTp, sp));
    INFO("cp " << cp);
    CHECK(split.forward_bytes == Approx(one.forward_bytes / cp).epsilon(1e-12));
    const model::MemoryFootprint m = model::memory_footprint(arch, w, sp, kTp);
    const model::MemoryFootprint base = model::memory_footprint(arch, whole, sp, kTp);
    CHECK(m.activation_bytes == Approx(base.activation_bytes / cp).epsilon(1e-12));
    // The backward's send and receive buffers, each K/V and dK/dV of the rank's tokens: 4 blocks of 2 (S/cp) hkv d.
    CHECK(m.buffer_bytes == Approx(4.0 * 2.0 * (seq / cp) * kKvHeadsPerRank * kHeadDim * 2.0));
  }
}

TEST_CASE("parallelism.cp and cp_comm_type reach the workload, and what CP does not model is refused at its key") {
  const model::Scenario s =
      model::parse_scenario(scenario_text("{tp: 8, dp: 2, cp: 2, cp_comm_type: all_gather}"), "ok.yaml");
  CHECK(s.workload.context_parallel.degree == 2);
  CHECK(s.workload.context_parallel.comm == model::CpCommType::kAllGather);
  CHECK(s.workload.context_parallel.member_stride == 8);
  CHECK(model::primary_pass(s.workload).new_tokens == 4096);
  const auto refused = [](const std::string& text, const std::string& what) {
    CHECK_THROWS_WITH(model::parse_scenario(text, "s.yaml"), Catch::Contains("s.yaml:") && Catch::Contains(what));
  };
  refused(scenario_text("{tp: 8, cp: 4}", "", 8196), "not a multiple of it");
  refused(scenario_text("{tp: 8, cp: 2}", "", 8192, "forward"), "phase train only");
  refused(scenario_text("{tp: 8, cp: 2, cp_comm_type: a2a}"), "does not divide");  // one K/V head per TP rank
  refused(scenario_text("{tp: 8, cp_comm_type: p2p}"), "cp of 2 or more");
  refused(scenario_text("{tp: 8, cp: 2, cp_comm_type: a2a+p2p}"), "must be one of: p2p, all_gather, a2a");
  refused(scenario_text("{tp: 8, cp: 2, cp_comm_type: torch_all_gather}", "", 8192, "train, attention_dtype: fp8"),
          "no fp8 attention");
  refused(scenario_text("{tp: 8, pp: 2, dp: 2, cp: 2, order: [tp, pp, dp]}"), "[tp, pp, dp] with cp > 1");
  // Mistral 7B v0.1's 4,096-key window would let ring steps past the window skip their blocks: not modelled.
  std::string windowed = scenario_text("{tp: 8, cp: 2}");
  windowed.replace(windowed.find("llama-3.1-8b"), std::string("llama-3.1-8b").size(), "mistral-7b-v0.1");
  refused(windowed, "sliding-window attention is not modelled");
}
