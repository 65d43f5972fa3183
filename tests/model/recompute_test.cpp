// Activation recomputation: what selective recomputation re-issues for a save list, and the saved
// activation memory of none / full / selective with and without sequence parallelism, against closed forms.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "model/graph/graph_builder.hpp"
#include "model/memory/activation_memory.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::OpKind;
using model::OpStage;
using model::Recompute;
using model::TpMode;

namespace {

// A one-micro-batch step of 2048 tokens without the optimizer.
model::Workload train_workload(int64_t layers, Recompute recompute, model::SaveList save = {}) {
  model::Workload w = test::train_workload(1, 2048, layers, recompute, 1, false);
  w.save = save;
  return w;
}

model::LayerGraph train_graph(TpMode mode, const model::Workload& w, int chunks = 1) {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  return model::build_layer_graph(arch, w, 8, test::variant(mode, chunks));
}

// Count of the recomputed ops of each kind (collectives by their collective kind).
struct Recomputed {
  int gemms = 0, attention = 0, exchanges = 0;
  std::map<model::CollectiveKind, int> collectives;
  double gemm_flops = 0;
};

Recomputed recomputed(const model::LayerGraph& g) {
  Recomputed r;
  for (const model::Op& op : g.ops()) {
    if (op.stage != OpStage::kRecompute) continue;
    if (op.kind == OpKind::kGemm) {
      ++r.gemms;
      r.gemm_flops += op.flops;
    }
    r.attention += op.kind == OpKind::kAttention;
    r.exchanges += op.kind == OpKind::kExchange;
    if (op.kind == OpKind::kCollective) ++r.collectives[op.collective];
  }
  return r;
}

int forward_count(const model::LayerGraph& g, model::CollectiveKind kind) {
  int n = 0;
  for (const model::Op& op : g.ops()) {
    n += op.stage == OpStage::kForward && op.module >= 0 && op.kind == OpKind::kCollective && op.collective == kind;
  }
  return n;
}

}  // namespace

TEST_CASE(
    "selective recomputation with the reduce-scatter outputs saved re-issues the all-gathers and not the "
    "reduce-scatters") {
  const model::LayerGraph g = train_graph(TpMode::kSp, train_workload(2, Recompute::kSelective));
  Recomputed r = recomputed(g);
  CHECK(r.collectives[model::CollectiveKind::kAllGather] == forward_count(g, model::CollectiveKind::kAllGather));
  CHECK(r.collectives[model::CollectiveKind::kAllGather] == 4);  // QKV's and gate/up's input, two layers
  CHECK(r.collectives.count(model::CollectiveKind::kReduceScatter) == 0);
  // The default list keeps QKV and gate/up (the 1st and 3rd matmuls) and the attention output; O and
  // down are not read by the backward once the reduce-scatter outputs are kept: no GEMM runs again.
  CHECK(r.gemms == 0);
  CHECK(r.attention == 0);
}

TEST_CASE("selective recomputation without reduce-scatter outputs in the list re-issues the attention's") {
  model::SaveList no_scatter;
  no_scatter.reduce_scatter = false;
  Recomputed r = recomputed(train_graph(TpMode::kSp, train_workload(1, Recompute::kSelective, no_scatter)));
  // The FFN's norm reads the attention's residual: its reduce-scatter and O's GEMM run again; the FFN's
  // own reduce-scatter feeds nothing the layer's backward reads.
  CHECK(r.collectives[model::CollectiveKind::kReduceScatter] == 1);
  CHECK(r.gemms == 1);
}

TEST_CASE("selective recomputation under tp re-issues the attention's all-reduce and the O projection") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const model::LayerGraph g = train_graph(TpMode::kTp, train_workload(2, Recompute::kSelective));
  Recomputed r = recomputed(g);
  CHECK(r.collectives[model::CollectiveKind::kAllReduce] == 2);  // one per layer: after O, not after down
  CHECK(r.gemms == 2);
  const double t = 2048, h = static_cast<double>(arch.hidden), q = 4.0 * arch.head_dim;
  CHECK(r.gemm_flops == Approx(2 * 2 * t * h * q));  // O: [t, q] x [q, h], two layers
}

TEST_CASE("selective recomputation recomputes the matmuls the list leaves out, and no attention it keeps") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  model::SaveList attention_only{false, false, true, true, false, false};
  Recomputed r = recomputed(train_graph(TpMode::kSp, train_workload(1, Recompute::kSelective, attention_only)));
  const double t = 2048, h = static_cast<double>(arch.hidden), d = static_cast<double>(arch.head_dim);
  const double qkv = 2 * t * h * (4 + 2 * 1) * d, gate_up = 2 * t * h * 2 * (14336.0 / 8);
  CHECK(r.gemms == 2);  // QKV (read by the attention backward) and gate/up (read by SwiGLU's)
  CHECK(r.gemm_flops == Approx(qkv + gate_up));
  CHECK(r.attention == 0);
}

TEST_CASE(
    "TorchTitan's every-other-matmul policy counts separate q, k, v and gate, up GEMMs one by one, so the k and up "
    "projections run again and the others do not") {
  // Seven matmuls per layer in issue order: q, k, v, o, gate (w1), up (w3), down (w2). The odd ones are
  // kept: q, v, gate, down. The backward reads up's output (SwiGLU's), so up runs again, after its gathered
  // input; RoPE, run again for the attention backward, reads q and k through v (the parts chain, the last
  // standing for the projection's output), so k runs again while q and v are read as kept.
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  model::Workload w = train_workload(1, Recompute::kSelective);
  w.implementation.name = "custom";
  w.implementation.separate_qkv = true;
  w.implementation.separate_gate_up = true;
  const model::LayerGraph g = train_graph(TpMode::kSp, w);
  std::vector<std::string> gemms;
  for (const model::Op& op : g.ops()) {
    if (op.stage == OpStage::kRecompute && op.kind == OpKind::kGemm) gemms.push_back(op.name);
  }
  CHECK(gemms == std::vector<std::string>{"L0.recompute.attn.qkv_proj.k", "L0.recompute.ffn.gate_up_proj.up"});
  // k runs again without reading the kept q it was chained behind: nothing recomputed reads q, which v's output
  // (the projection's) already counts among the saved tensors.
  for (const model::Op& op : g.ops()) {
    if (op.stage != OpStage::kRecompute) continue;
    for (const model::Dep& d : op.deps) CHECK_FALSE((d.data && g.op(d.op).name == "L0.attn.qkv_proj.q"));
  }
  const double t = 2048, h = static_cast<double>(arch.hidden);
  const double kv_cols = static_cast<double>(arch.kv_heads * arch.head_dim) / 8;
  CHECK(recomputed(g).gemm_flops == Approx(2 * t * h * (14336.0 / 8) + 2 * t * h * kv_cols));
  // Fused, the same policy counts four matmuls (qkv, o, gate/up, down) and keeps gate/up whole.
  CHECK(recomputed(train_graph(TpMode::kSp, train_workload(1, Recompute::kSelective))).gemms == 0);
}

TEST_CASE(
    "a kept part of a linear run as separate GEMMs is held from the forward, and a part run again only while its "
    "layer recomputes") {
  // TorchTitan's policy keeps q and v of q, k, v and the gate of gate, up (aten.mm calls 1, 3 and 5); torch's
  // partitioner saves a kept op's output wherever the backward reads it, and runs the others again. The fused
  // graph keeps QKV and gate/up whole: the separate one holds the same tensors, but k's and up's shares only while
  // the layer recomputes, so they move from the forward's saved set (held per layer) to the recomputation's (once).
  const double t = 2048, k = 1.0 * 128, f = 14336.0 / 8, e = 2;  // per rank at tp 8
  const model::SavedActivations fused =
      model::saved_activations(train_graph(TpMode::kSp, train_workload(1, Recompute::kSelective)));
  model::Workload w = train_workload(1, Recompute::kSelective);
  w.implementation.name = "custom";
  w.implementation.separate_qkv = true;
  w.implementation.separate_gate_up = true;
  const model::SavedActivations separate = model::saved_activations(train_graph(TpMode::kSp, w));
  CHECK(separate.forward_bytes == Approx(fused.forward_bytes - e * t * (k + f)));
  CHECK(separate.recompute_bytes == Approx(fused.recompute_bytes + e * t * (k + f)));
}

TEST_CASE("without TP the save list keeps no reduce-scatter output, so the O projection runs again") {
  // TorchTitan's list keeps reduce_scatter_tensor's output, an op its block runs only under TP: at tp 1 the O
  // projection's output is not kept, and the residual the FFN's norm reads is recomputed through O's GEMM.
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const model::Workload w = train_workload(1, Recompute::kSelective);
  const auto recomputed_gemms = [&](int tp) {
    std::vector<std::string> names;
    const model::LayerGraph g = model::build_layer_graph(arch, w, tp, test::variant(TpMode::kSp));
    for (const model::Op& op : g.ops()) {
      if (op.stage == OpStage::kRecompute && op.kind == OpKind::kGemm) names.push_back(op.name);
    }
    return names;
  };
  CHECK(recomputed_gemms(8).empty());
  CHECK(recomputed_gemms(1) == std::vector<std::string>{"L0.recompute.attn.o_proj"});
}

TEST_CASE("selective recomputation under async TP re-issues the pipeline's all-gather steps without its GEMMs") {
  const model::LayerGraph g = train_graph(TpMode::kAsync, train_workload(1, Recompute::kSelective), 8);
  Recomputed r = recomputed(g);
  int forward_gather_steps = 0;
  for (const model::Op& op : g.ops()) {
    forward_gather_steps +=
        op.stage == OpStage::kForward && op.module >= 0 && op.saved_as == model::SavedAs::kAllGather;
  }
  CHECK(forward_gather_steps == 2 * 7);  // QKV's and gate/up's pipelines: tp - 1 steps each
  CHECK(r.exchanges == forward_gather_steps);
  CHECK(r.gemms == 0);
}

TEST_CASE("selective recomputation adds no model FLOPs and keeps the step's forward and backward unchanged") {
  const model::LayerGraph none = train_graph(TpMode::kSp, train_workload(2, Recompute::kNone));
  const model::LayerGraph selective = train_graph(TpMode::kSp, train_workload(2, Recompute::kSelective));
  CHECK(selective.model_flops() == Approx(none.model_flops()).epsilon(1e-12));
  size_t not_recomputed = 0;
  for (const model::Op& op : selective.ops()) not_recomputed += op.stage != OpStage::kRecompute;
  CHECK(not_recomputed == none.size());
}

TEST_CASE(
    "activation memory equals the closed forms for none, full and selective, with and without sequence "
    "parallelism") {
  // Per rank at tp 8: t tokens, r rows of the residual stream (t / 8 when sequence-parallel), hidden h,
  // q and k the local query and key widths, f the local FFN width; bf16 throughout.
  const double t = 2048, h = 4096, q = 4 * 128, k = 1 * 128, f = 14336.0 / 8, e = 2;
  for (const TpMode mode : {TpMode::kTp, TpMode::kSp}) {
    const double r = mode == TpMode::kSp ? t / 8 : t;
    // none: each module's input (r h) and normed input as its GEMM reads it (t h: gathered under sp), QKV,
    // rotated Q and K, the attention output; gate/up and the SwiGLU output.
    const double none = 2 * r * h + 2 * t * h + t * (q + 2 * k) + t * (q + k) + t * q + 2 * t * f + t * f;
    // full: the layer's input alone; Korthikanti et al. (2022) count the same, 2sbh per layer, over tp
    // with sequence parallelism (their other rows count GPT-3's dropout masks, GeLU and unfused attention).
    const double full = r * h;
    // selective (TorchTitan's list): the layer's input, QKV (1st matmul), the attention output, gate/up
    // (3rd matmul), and under sp the attention's reduce-scatter output (what the recomputed residual reads;
    // under tp its all-reduce is recomputed from the kept attention output).
    const double selective = r * h + t * (q + 2 * k) + t * q + 2 * t * f + (mode == TpMode::kSp ? r * h : 0);
    const std::map<Recompute, double> per_layer = {
        {Recompute::kNone, none}, {Recompute::kFull, full}, {Recompute::kSelective, selective}};
    std::map<Recompute, double> one_layer;
    for (const auto& [recompute, bytes_per_layer] : per_layer) {
      INFO(model::to_string(mode) << " recompute " << model::to_string(recompute));
      const double one = model::saved_activation_peak_bytes(train_graph(mode, train_workload(1, recompute)));
      const double two = model::saved_activation_peak_bytes(train_graph(mode, train_workload(2, recompute)));
      CHECK(two - one == Approx(e * bytes_per_layer));
      one_layer[recompute] = one;
    }
    // One layer's recomputation holds, while its backward runs, what the save list dropped: full holds it
    // all again (the peak of one layer is none's); selective holds it too, plus under sp the kept
    // reduce-scatter output that none never stored.
    INFO(model::to_string(mode));
    CHECK(one_layer[Recompute::kFull] == Approx(one_layer[Recompute::kNone]));
    CHECK(one_layer[Recompute::kSelective] - one_layer[Recompute::kNone] ==
          Approx(mode == TpMode::kSp ? e * r * h : 0.0).margin(1e-6));
  }
}
