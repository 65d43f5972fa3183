// The training step's graph: backward GEMMs, collectives mirrored per mode, recomputation, micro-batches.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "base/input_error.hpp"
#include "model/graph/graph_builder.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::OpId;
using model::OpKind;
using model::OpStage;
using model::TpMode;

namespace {

using test::train_workload;

model::LayerGraph train_graph(TpMode mode, const model::Workload& w, int chunks = 1) {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  return model::build_layer_graph(arch, w, 8, test::variant(mode, chunks));
}

// Sum of `field` over the ops of one kind and stage.
double flops_of(const model::LayerGraph& g, OpKind kind, OpStage stage, int layer = -1) {
  double total = 0;
  for (const model::Op& op : g.ops()) {
    if (op.kind == kind && op.stage == stage && (layer < 0 || (op.module >= 0 && op.layer == layer))) total += op.flops;
  }
  return total;
}

// (collective kind, stage) -> {count, tensor bytes}.
std::map<std::pair<model::CollectiveKind, OpStage>, std::pair<int, double>> collectives(const model::LayerGraph& g) {
  std::map<std::pair<model::CollectiveKind, OpStage>, std::pair<int, double>> out;
  for (const model::Op& op : g.ops()) {
    if (op.kind != OpKind::kCollective || op.module < 0) continue;
    auto& [count, bytes] = out[{op.collective, op.stage}];
    ++count;
    bytes += op.tensor_bytes;
  }
  return out;
}

}  // namespace

TEST_CASE("data-gradient and weight-gradient GEMMs do twice each layer's forward GEMM FLOPs") {
  const auto w = train_workload(1, 2048, 3);
  for (const TpMode mode : {TpMode::kTp, TpMode::kSp, TpMode::kAsync, TpMode::kNoComm}) {
    const model::LayerGraph g = train_graph(mode, w, mode == TpMode::kAsync ? 8 : 1);
    for (int layer = 0; layer < 3; ++layer) {
      INFO(model::to_string(mode) << " layer " << layer);
      const double forward = flops_of(g, OpKind::kGemm, OpStage::kForward, layer);
      CHECK(forward > 0);
      CHECK(flops_of(g, OpKind::kGemm, OpStage::kBackward, layer) == Approx(2.0 * forward).epsilon(1e-12));
    }
  }
}

TEST_CASE("attention backward does 2.5 times the forward's FLOPs, as FlashAttention-2 counts it") {
  const model::LayerGraph g = train_graph(TpMode::kSp, train_workload(2, 1024, 2));
  const double forward = flops_of(g, OpKind::kAttention, OpStage::kForward);
  CHECK(flops_of(g, OpKind::kAttention, OpStage::kBackward) == Approx(2.5 * forward).epsilon(1e-12));
}

TEST_CASE("sp backward moves the forward's bytes with all-gathers and reduce-scatters swapped") {
  const auto by_kind = collectives(train_graph(TpMode::kSp, train_workload(1, 2048, 2)));
  using model::CollectiveKind;
  const auto fwd_ag = by_kind.at({CollectiveKind::kAllGather, OpStage::kForward});
  const auto fwd_rs = by_kind.at({CollectiveKind::kReduceScatter, OpStage::kForward});
  CHECK(by_kind.at({CollectiveKind::kReduceScatter, OpStage::kBackward}) == fwd_ag);
  CHECK(by_kind.at({CollectiveKind::kAllGather, OpStage::kBackward}) == fwd_rs);
  CHECK(fwd_ag.first == 4);  // QKV and gate/up of two layers
  CHECK(by_kind.count({CollectiveKind::kAllReduce, OpStage::kBackward}) == 0);
}

TEST_CASE("tp backward all-reduces each column-parallel input gradient and nothing else") {
  const auto by_kind = collectives(train_graph(TpMode::kTp, train_workload(1, 2048, 2)));
  const auto fwd = by_kind.at({model::CollectiveKind::kAllReduce, OpStage::kForward});
  CHECK(by_kind.at({model::CollectiveKind::kAllReduce, OpStage::kBackward}) == fwd);
  CHECK(by_kind.size() == 2);
}

TEST_CASE("full recomputation adds one forward per layer, all-gathers included, and no model FLOPs") {
  const model::LayerGraph plain = train_graph(TpMode::kSp, train_workload(1, 2048, 2));
  const model::LayerGraph full = train_graph(TpMode::kSp, train_workload(1, 2048, 2, model::Recompute::kFull));
  for (int layer = 0; layer < 2; ++layer) {
    INFO("layer " << layer);
    CHECK(flops_of(full, OpKind::kGemm, OpStage::kRecompute, layer) ==
          Approx(flops_of(full, OpKind::kGemm, OpStage::kForward, layer)));
    CHECK(flops_of(full, OpKind::kAttention, OpStage::kRecompute, layer) ==
          Approx(flops_of(full, OpKind::kAttention, OpStage::kForward, layer)));
  }
  const auto by_kind = collectives(full);
  CHECK(by_kind.at({model::CollectiveKind::kAllGather, OpStage::kRecompute}) ==
        by_kind.at({model::CollectiveKind::kAllGather, OpStage::kForward}));
  CHECK(full.model_flops() == Approx(plain.model_flops()).epsilon(1e-12));
  CHECK(full.matmul_flops() > plain.matmul_flops());
}

TEST_CASE("full recomputation of the first N layers re-runs only those layers' forwards") {
  model::Workload w = train_workload(1, 2048, 3, model::Recompute::kFull);
  w.recompute_layers = 2;
  const model::LayerGraph g = train_graph(TpMode::kSp, w);
  for (int layer = 0; layer < 3; ++layer) {
    INFO("layer " << layer);
    // Megatron's block method: layers 0 and 1 of the program re-run their forward, layer 2 keeps its activations.
    const double expected = layer < 2 ? flops_of(g, OpKind::kGemm, OpStage::kForward, layer) : 0.0;
    CHECK(flops_of(g, OpKind::kGemm, OpStage::kRecompute, layer) == Approx(expected));
  }
  model::Workload every = w;
  every.recompute_layers = 0;  // the default: every layer
  CHECK(flops_of(train_graph(TpMode::kSp, every), OpKind::kGemm, OpStage::kRecompute, 2) ==
        Approx(flops_of(g, OpKind::kGemm, OpStage::kForward, 2)));
}

TEST_CASE("each micro-batch runs its own forward and backward, and the optimizer runs once") {
  const model::LayerGraph one = train_graph(TpMode::kSp, train_workload(1, 1024, 2, model::Recompute::kNone, 1));
  const model::LayerGraph three = train_graph(TpMode::kSp, train_workload(1, 1024, 2, model::Recompute::kNone, 3));
  CHECK(three.model_flops() == Approx(3.0 * one.model_flops()).epsilon(1e-12));
  int adamw = 0;
  for (const model::Op& op : three.ops()) adamw += op.name == "optimizer.adamw";
  CHECK(adamw == 1);
  CHECK(three.op(0).name.rfind("mb0.", 0) == 0);
}

TEST_CASE("AdamW reads and writes the fp32 state of every local parameter, embedding and LM head included") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const model::LayerGraph g = train_graph(TpMode::kSp, train_workload(1, 1024, 2));
  const model::TpShard s = model::shard_for_tp(arch, 8);
  const double h = static_cast<double>(arch.hidden), hd = static_cast<double>(arch.head_dim);
  const double per_layer = h * static_cast<double>(s.q_heads + 2 * s.kv_heads) * hd +
                           static_cast<double>(s.q_heads) * hd * h + 3.0 * h * static_cast<double>(s.ffn) + 2.0 * h;
  // Untied embedding and LM head, vocab / 8 rows each, and the final norm.
  const double params = 2 * per_layer + 2.0 * static_cast<double>((arch.vocab + 7) / 8) * h + h;
  for (const model::Op& op : g.ops()) {
    if (op.name != "optimizer.adamw") continue;
    CHECK(op.stage == OpStage::kOptimizer);
    CHECK(op.bytes_read == Approx(16.0 * params));     // weight, gradient, two moments
    CHECK(op.bytes_written == Approx(14.0 * params));  // weight, moments, bf16 copy
  }
}

TEST_CASE("phase train refuses what it does not model yet, naming it") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  model::Variant dtp = test::variant(TpMode::kDtp);
  dtp.delta = 1;
  CHECK_THROWS_WITH(model::build_layer_graph(arch, train_workload(1, 1024, 2, model::Recompute::kFull), 8, dtp),
                    Catch::Contains("dtp") && Catch::Contains("recompute: none"));
}

TEST_CASE(
    "dtp backward reduces each delayed partial's gradient once, delta modules before its linear reads it, and "
    "drops tp's input-gradient all-reduces") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  model::Variant dtp = test::variant(TpMode::kDtp);
  dtp.delta = 1;
  const model::LayerGraph g = model::build_layer_graph(arch, train_workload(1, 1024, 2), 8, dtp);
  // Four modules, delta 1: modules 0 and 1 reduce their partials forward (modules 2 and 3 add them); in
  // backward the gradients of modules 2's and 3's inputs are reduced for modules 0's and 1's linears.
  std::map<std::string, OpId> by_name;
  for (OpId id = 0; id < g.size(); ++id) by_name[g.op(id).name] = id;
  int forward_partials = 0, backward_reductions = 0, dgrad_all_reduces = 0;
  for (const model::Op& op : g.ops()) {
    if (op.kind != OpKind::kCollective) continue;
    forward_partials += op.name.find(".partials.all_reduce") != std::string::npos;
    backward_reductions += op.name.find("dtp.backward.input_gradient") != std::string::npos;
    if (op.name.find(".dgrad.all_reduce") != std::string::npos) {
      ++dgrad_all_reduces;
      CHECK(op.name == "lm_head.dgrad.all_reduce");  // the head reads the reduced hidden state all ranks share
    }
  }
  CHECK(forward_partials == 2);
  CHECK(backward_reductions == 2);
  CHECK(dgrad_all_reduces == 1);
  // Module 0 (layer 0's attention): its O projection's data gradient reads the peers' gradients of
  // module 2's input (layer 1's attention), reduced after module 2's backward and added to its own.
  const OpId add = by_name.at("L0.dtp.backward.add_peer_gradients_of_module2");
  const OpId reduction = by_name.at("L1.dtp.backward.input_gradient.all_reduce");
  const std::vector<OpId> reads = g.data_inputs(add);
  CHECK(std::find(reads.begin(), reads.end(), reduction) != reads.end());
  const std::vector<OpId> dgrad_reads = g.data_inputs(by_name.at("L0.attn.o_proj.dgrad"));
  CHECK(dgrad_reads == std::vector<OpId>{add});
  CHECK(g.op(reduction).stage == OpStage::kBackward);
}

TEST_CASE("dtp with delta 0 trains exactly as tp") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const model::LayerGraph tp = train_graph(TpMode::kTp, train_workload(1, 1024, 2));
  model::Variant blocking = test::variant(TpMode::kDtp);
  blocking.delta = 0;
  const model::LayerGraph dtp0 = model::build_layer_graph(arch, train_workload(1, 1024, 2), 8, blocking);
  REQUIRE(dtp0.size() == tp.size());
  for (OpId id = 0; id < tp.size(); ++id) {
    CHECK(dtp0.op(id).name == tp.op(id).name);
    CHECK(dtp0.op(id).flops == tp.op(id).flops);
    CHECK(dtp0.op(id).tensor_bytes == tp.op(id).tensor_bytes);
  }
}

TEST_CASE("the LM head runs forward once and backward twice as a vocab-parallel GEMM, and the loss all-reduces") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const double t = 2048, v = static_cast<double>((arch.vocab + 7) / 8);
  for (const TpMode mode : {TpMode::kTp, TpMode::kSp}) {
    const model::LayerGraph g = train_graph(mode, train_workload(1, 2048, 1));
    double forward = 0, backward = 0;
    int loss_reduces = 0, embedding_collectives = 0;
    for (const model::Op& op : g.ops()) {
      if (op.name.rfind("lm_head", 0) == 0 && op.kind == OpKind::kGemm) {
        (op.stage == OpStage::kForward ? forward : backward) += op.flops;
      }
      if (op.name.rfind("loss.", 0) == 0 && op.kind == OpKind::kCollective) {
        ++loss_reduces;
        CHECK(op.tensor_bytes == Approx(4 * t));  // one fp32 per token
      }
      if (op.name.rfind("embedding", 0) == 0 && op.kind == OpKind::kCollective) ++embedding_collectives;
    }
    INFO(model::to_string(mode));
    CHECK(forward == Approx(2 * t * v * arch.hidden));
    CHECK(backward == Approx(2 * forward));
    CHECK(loss_reduces == 3);
    // tp: the lookup's all-reduce; sp: its reduce-scatter and the gradient's all-gather.
    CHECK(embedding_collectives == (mode == TpMode::kTp ? 1 : 2));
  }
}

TEST_CASE("micro-batches after the first accumulate into the fp32 gradients their weight-gradient GEMMs write") {
  const model::LayerGraph g = train_graph(TpMode::kSp, train_workload(1, 1024, 1, model::Recompute::kNone, 2));
  int checked = 0;
  for (const model::Op& op : g.ops()) {
    if (op.kind != OpKind::kGemm || op.name.find(".wgrad") == std::string::npos) continue;
    const double operands = 2.0 * static_cast<double>(op.gemm.m * op.gemm.k + op.gemm.k * op.gemm.n);
    const double gradient = 4.0 * static_cast<double>(op.gemm.m * op.gemm.n);  // fp32, one per weight
    const bool first = op.name.rfind("mb0.", 0) == 0;
    INFO(op.name);
    CHECK(op.bytes_written == gradient);
    CHECK(op.bytes_read == Approx(operands + (first ? 0.0 : gradient)));
    ++checked;
  }
  CHECK(checked == 2 * (4 + 1));  // two micro-batches: QKV, O, gate/up, down and the LM head
}
