// What a GPT-style layer runs beyond Llama's: a parallel attention + MLP layer's single TP reduction (collective
// counts and bytes against closed forms), its backward's gradient sum, the linear biases' gradient reductions and
// the learned positions' lookup and add, priced from their bytes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "input/model/hf_config.hpp"
#include "model/graph/graph_builder.hpp"
#include "model/scenario.hpp"
#include "test_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;
using test::op_named;

namespace {

// The TP collectives of `kind` the graph's layers issue in `stage` (not the embedding's or the head's), and the
// bytes they move.
struct CollectiveTally {
  int count = 0;
  double bytes = 0;
};
CollectiveTally tally(const model::LayerGraph& g, model::CollectiveKind kind, model::OpStage stage) {
  CollectiveTally t;
  for (const model::Op& op : g.ops()) {
    if (op.kind != model::OpKind::kCollective || op.group != model::CommGroup::kTensor) continue;
    if (op.collective != kind || op.stage != stage || op.module < 0) continue;
    ++t.count;
    t.bytes += op.tensor_bytes;
  }
  return t;
}

bool has_op(const model::LayerGraph& g, const std::string& name) {
  const auto& ops = g.ops();
  return std::any_of(ops.begin(), ops.end(), [&](const model::Op& op) { return op.name == name; });
}

// Pythia-12B (parallel attention and MLP) and the same layers run one after the other.
model::ArchSpec pythia(bool parallel) {
  model::ArchSpec a = model::load_model_preset("pythia-12b");
  a.style.parallel_residual = parallel;
  return a;
}

constexpr int64_t kLayers = 3, kSeq = 2048;
constexpr double kHidden = 5120, kBf16 = 2;

}  // namespace

TEST_CASE("a parallel attention and MLP layer all-reduces the sum of its two branches once in the forward") {
  const int tp = 8;
  const model::Workload w = test::forward_workload(1, kSeq, kLayers);
  const model::LayerGraph parallel = model::build_layer_graph(pythia(true), w, tp, test::variant(model::TpMode::kTp));
  const model::LayerGraph sequential =
      model::build_layer_graph(pythia(false), w, tp, test::variant(model::TpMode::kTp));
  // One [tokens, hidden] bf16 all-reduce per layer, where a sequential layer runs two.
  const double tensor = kSeq * kHidden * kBf16;
  const CollectiveTally one = tally(parallel, model::CollectiveKind::kAllReduce, model::OpStage::kForward);
  CHECK(one.count == kLayers);
  CHECK(one.bytes == Approx(kLayers * tensor));
  CHECK(tally(sequential, model::CollectiveKind::kAllReduce, model::OpStage::kForward).count == 2 * kLayers);
  CHECK_FALSE(has_op(parallel, "L0.attn.o_proj.all_reduce"));
  CHECK(op_named(parallel, "L0.ffn.down_proj.all_reduce").tensor_bytes == Approx(tensor));
  // The FFN's down projection accumulates into the attention's o_proj output: it reads it, and the FFN's norm
  // reads the layer's input, not the attention's output (there is no attention residual add).
  const model::LayerGraph& g = parallel;
  model::OpId down = 0, o_proj = 0;
  for (model::OpId id = 0; id < g.size(); ++id) {
    if (g.op(id).name == "L1.ffn.down_proj") down = id;
    if (g.op(id).name == "L1.attn.o_proj") o_proj = id;
  }
  const std::vector<model::OpId> inputs = g.data_inputs(down);
  CHECK(std::find(inputs.begin(), inputs.end(), o_proj) != inputs.end());
  CHECK_FALSE(has_op(parallel, "L1.attn.residual"));
  CHECK(has_op(sequential, "L1.attn.residual"));
}

TEST_CASE(
    "a parallel layer under sequence parallelism reduce-scatters once per layer and its backward reads one gradient") {
  const int tp = 8;
  const model::Workload w = test::train_workload(1, kSeq, kLayers);
  const model::LayerGraph g = model::build_layer_graph(pythia(true), w, tp, test::variant(model::TpMode::kSp));
  const double tensor = kSeq * kHidden * kBf16;
  using model::CollectiveKind, model::OpStage;
  // Forward: each branch gathers its own norm's output (two all-gathers), the summed partials scatter once.
  CHECK(tally(g, CollectiveKind::kReduceScatter, OpStage::kForward).count == kLayers);
  CHECK(tally(g, CollectiveKind::kReduceScatter, OpStage::kForward).bytes == Approx(kLayers * tensor));
  CHECK(tally(g, CollectiveKind::kAllGather, OpStage::kForward).count == 2 * kLayers);
  // Backward: both row-parallel linears read the layer output's gradient (each gathers it, as GPT-NeoX's two
  // linears do), and each column-parallel linear's input gradient is reduce-scattered: two and two per layer.
  CHECK(tally(g, CollectiveKind::kAllGather, OpStage::kBackward).count == 2 * kLayers);
  CHECK(tally(g, CollectiveKind::kReduceScatter, OpStage::kBackward).count == 2 * kLayers);
  // The layer input's gradient sums the output's gradient and both branches': the attention's residual backward
  // reads the FFN's, which reads the layer output's gradient.
  CHECK(has_op(g, "L1.attn.residual.backward"));
  CHECK(has_op(g, "L1.ffn.residual.backward"));
}

TEST_CASE("a parallel layer with a delayed DTP reduction is refused in one line naming what is valid") {
  model::Variant v = test::variant(model::TpMode::kDtp);
  v.delta = 1;
  CHECK_THROWS_WITH(model::build_layer_graph(pythia(true), test::forward_workload(1, kSeq, kLayers), 8, v),
                    Contains("runs attention and MLP in parallel") && Contains("dtp with delta > 0") &&
                        Contains("valid with a parallel layer"));
  v.delta = 0;
  CHECK_NOTHROW(model::build_layer_graph(pythia(true), test::forward_workload(1, kSeq, kLayers), 8, v));
  // A scenario says where: at the variant's tp_mode.
  const std::string text =
      "name: p\nmodel: pythia-12b\nhardware: {gpu: h100-sxm, topology: nvswitch, nodes: 1}\n"
      "workload: {phase: forward, batch: 1, seq_len: 2048, layers: 2}\nparallelism: {tp: 8}\n"
      "variants:\n  - {name: tp, tp_mode: tp}\n  - {name: d, tp_mode: dtp, delta: 1}\n";
  CHECK_THROWS_WITH(model::parse_scenario(text, "p.yaml"),
                    Contains("p.yaml:8:") && Contains("variant d: tp_mode dtp with delta > 0 is not modelled") &&
                        Contains("use tp, sp, async, nocomm or dtp with delta: 0"));
}

TEST_CASE(
    "each biased linear's gradient is one reduction over its output gradient's bytes unless Transformer Engine fuses "
    "it") {
  const int tp = 8;
  const model::LayerGraph g =
      model::build_layer_graph(pythia(true), test::train_workload(1, kSeq, 1), tp, test::variant(model::TpMode::kSp));
  // Column-parallel linears: their gradient is whole over the tokens, their columns split (q, k, v of 40 heads of
  // 128; the GeLU FFN's 4h). Row-parallel ones: the stream's gradient over the rank's rows of the sequence.
  const double tokens = kSeq, rows = kSeq / tp;
  const double qkv_cols = 3.0 * 40 * 128 / tp, ffn_cols = 4.0 * kHidden / tp;
  CHECK(op_named(g, "L0.attn.qkv_proj.bias_grad").bytes_read == Approx(tokens * qkv_cols * kBf16));
  CHECK(op_named(g, "L0.attn.qkv_proj.bias_grad").bytes_written == Approx(qkv_cols * kBf16));
  CHECK(op_named(g, "L0.ffn.up_proj.bias_grad").bytes_read == Approx(tokens * ffn_cols * kBf16));
  CHECK(op_named(g, "L0.attn.o_proj.bias_grad").bytes_read == Approx(rows * kHidden * kBf16));
  CHECK(op_named(g, "L0.ffn.down_proj.bias_grad").bytes_read == Approx(rows * kHidden * kBf16));
  // Transformer Engine's linears take it in the weight-gradient GEMM's epilogue; Llama has no biases.
  model::Workload te = test::train_workload(1, kSeq, 1);
  te.implementation.saved_gemm_inputs = model::SavedGemmInputs::kTransformerEngine;
  CHECK_FALSE(has_op(model::build_layer_graph(pythia(true), te, tp, test::variant(model::TpMode::kSp)),
                     "L0.ffn.up_proj.bias_grad"));
  const model::LayerGraph llama =
      model::build_layer_graph(model::load_model_preset("llama-3.1-8b"), test::train_workload(1, kSeq, 1), tp,
                               test::variant(model::TpMode::kSp));
  CHECK_FALSE(has_op(llama, "L0.attn.qkv_proj.bias_grad"));
  CHECK_FALSE(has_op(llama, "L0.ffn.down_proj.bias_grad"));
}

TEST_CASE(
    "learned positions are looked up and added to the embedding over the stream's rows, and their gradient "
    "accumulated") {
  model::ArchSpec gpt = model::load_model_preset("pythia-12b");
  gpt.style.learned_positions = 2048;  // as GPT-2's wpe; the rest of the layer does not matter here
  const int tp = 4;
  model::Workload w = test::train_workload(2, 1024, 1);
  const model::LayerGraph g = model::build_layer_graph(gpt, w, tp, test::variant(model::TpMode::kSp));
  const double rows = 2.0 * 1024 / tp * kHidden * kBf16;  // the rank's rows of the sequence-parallel stream
  CHECK(op_named(g, "embedding.positions.lookup").bytes_written == Approx(rows));
  CHECK(op_named(g, "embedding.positions.add").bytes_read == Approx(2 * rows));
  CHECK(op_named(g, "embedding.positions.add").bytes_written == Approx(rows));
  CHECK(op_named(g, "embedding.positions.backward").bytes_read == Approx(2 * rows));
  CHECK_FALSE(has_op(model::build_layer_graph(pythia(true), w, tp, test::variant(model::TpMode::kSp)),
                     "embedding.positions.add"));
}
