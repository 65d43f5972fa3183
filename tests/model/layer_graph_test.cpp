// Layer graph invariants across variants: FLOPs, communication bytes, structure, chunk rules.
#include <catch2/catch.hpp>

#include "base/input_error.hpp"
#include "model/parallel/async_tp.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::TpMode;
using model::Transport;

namespace {

std::vector<model::Variant> all_variants() {
  return {test::variant(TpMode::kTp),
          test::variant(TpMode::kSp),
          test::variant(TpMode::kAsync, 8, Transport::kCopyEngine),
          test::variant(TpMode::kAsync, 4, Transport::kSm, model::ChunkOrder::kDirect),
          test::variant(TpMode::kAsync, 16, Transport::kSm, model::ChunkOrder::kRing, true),
          test::variant(TpMode::kAsync, 1, Transport::kCopyEngine, model::ChunkOrder::kDirect),
          test::variant(TpMode::kNoComm)};
}

}  // namespace

TEST_CASE("matmul FLOPs are identical across variants and equal the dense-layer formula") {
  const model::ArchSpec arch = model::load_model_preset("qwen3-8b");
  const int tp = 8;
  const int64_t batch = 2, seq = 1024, layers = 3;
  const auto w = test::forward_workload(batch, seq, layers);
  const double t = static_cast<double>(batch * seq);
  const double d = static_cast<double>(arch.head_dim);
  const double hq = static_cast<double>(arch.heads / tp), hkv = static_cast<double>(arch.kv_heads / tp);
  const double h = static_cast<double>(arch.hidden), ffn = static_cast<double>(arch.intermediate / tp);
  const double gemms = 2 * t * h * (hq + 2 * hkv) * d + 2 * t * hq * d * h + 2 * t * h * 2 * ffn + 2 * t * ffn * h;
  const double attention = 2.0 * batch * seq * seq * hq * d;  // causal: half of 4 b s^2 h d
  const double expected = layers * (gemms + attention);
  for (const auto& v : all_variants()) {
    INFO(model::to_string(v.mode) << " chunks " << v.chunks);
    CHECK(model::build_layer_graph(arch, w, tp, v).matmul_flops() == Approx(expected).epsilon(1e-12));
  }
}

TEST_CASE("all-gather plus reduce-scatter bytes equal all-reduce bytes, chunked or not") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const int tp = 8;
  const auto w = test::forward_workload(1, 2048, 2);
  const double tensor = 2048.0 * arch.hidden * 2;  // bf16 activations
  const double all_reduce = 2.0 * (tp - 1) / tp * tensor;
  const double per_layer = 2 * all_reduce;  // two all-reduces per layer
  const double tp_bytes = model::build_layer_graph(arch, w, tp, test::variant(TpMode::kTp)).wire_bytes_per_rank();
  CHECK(tp_bytes == Approx(2 * per_layer));
  for (const auto& v : all_variants()) {
    if (v.mode == TpMode::kNoComm) continue;
    INFO(model::to_string(v.mode) << " chunks " << v.chunks);
    CHECK(model::build_layer_graph(arch, w, tp, v).wire_bytes_per_rank() == Approx(tp_bytes).epsilon(1e-12));
  }
  CHECK(model::build_layer_graph(arch, w, tp, test::variant(TpMode::kNoComm)).wire_bytes_per_rank() == 0);
}

TEST_CASE("a layer graph takes an op only after every op it depends on, so its ids are a topological order") {
  model::LayerGraph graph(2);
  model::Op first;
  first.name = "first";
  const model::OpId a = graph.add(first);
  model::Op later;
  later.name = "later";
  later.deps = {{a + 1, 0}};  // itself: not yet added
  CHECK_THROWS_AS(graph.add(later), std::logic_error);
  later.deps = {{a, 0}};
  CHECK(graph.add(later) == a + 1);
  const model::ArchSpec arch = model::load_model_preset("qwen3-0.6b");
  const auto w = test::forward_workload(2, 512, 2);
  for (const auto& v : all_variants()) {
    const model::LayerGraph built = model::build_layer_graph(arch, w, 8, v);
    for (model::OpId id = 0; id < built.size(); ++id) {
      for (const model::Dep& dep : built.op(id).deps) CHECK(dep.op < id);
    }
  }
}

TEST_CASE("the async pipeline has one GEMM piece per chunk and one P2P step per remote unit") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const auto w = test::forward_workload(1, 4096, 1);
  const int tp = 8, chunks = 16;
  const model::LayerGraph graph =
      model::build_layer_graph(arch, w, tp, test::variant(TpMode::kAsync, chunks, Transport::kCopyEngine));
  int gemm_pieces = 0, exchanges = 0, collectives = 0;
  for (const model::Op& op : graph.ops()) {
    gemm_pieces += op.kind == model::OpKind::kGemm;
    exchanges += op.kind == model::OpKind::kExchange;
    collectives += op.kind == model::OpKind::kCollective;
  }
  const int units_per_shard = chunks / tp;
  CHECK(gemm_pieces == 4 * chunks);                    // qkv, o, gate_up, down
  CHECK(exchanges == 4 * (tp - 1) * units_per_shard);  // every unit but the local ones moves once
  CHECK(collectives == 0);
}

TEST_CASE("chunk counts must divide tp or be a multiple of it") {
  CHECK(model::check_chunks(4, 8).empty());
  CHECK(model::check_chunks(16, 8).empty());
  CHECK_FALSE(model::check_chunks(3, 8).empty());
  CHECK_FALSE(model::check_chunks(12, 8).empty());
  CHECK_THROWS_AS(model::plan_chunks(1000, 8, 16), InputError);  // 1000 tokens not divisible by 16 units
  const model::ChunkPlan plan = model::plan_chunks(4096, 8, 2);
  CHECK(plan.units == 8);
  CHECK(plan.units_per_piece == 4);
  CHECK(plan.unit_tokens == 512);
}
