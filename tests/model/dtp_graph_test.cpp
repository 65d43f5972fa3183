// DTP graphs: delta 0 is blocking TP; reductions are issued for every consumed module and added
// delta modules later; the all-gather flavour moves the partials of every rank.
#include <catch2/catch.hpp>

#include "test_support.hpp"

using namespace tpsim;
using model::TpMode;

namespace {

model::Variant dtp(int delta, bool allgather = false) {
  model::Variant v = test::variant(TpMode::kDtp);
  v.delta = delta;
  v.dtp_allgather = allgather;
  return v;
}

int count_named(const model::LayerGraph& graph, const std::string& part) {
  int n = 0;
  for (const model::Op& op : graph.ops()) n += op.name.find(part) != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("dtp with delta 0 builds exactly the tp graph") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const auto w = test::decode_workload(4, 1024, 3);
  const model::LayerGraph tp = model::build_layer_graph(arch, w, 8, test::variant(TpMode::kTp));
  const model::LayerGraph zero = model::build_layer_graph(arch, w, 8, dtp(0));
  REQUIRE(tp.size() == zero.size());
  for (model::OpId id = 0; id < tp.size(); ++id) {
    CHECK(tp.op(id).name == zero.op(id).name);
    CHECK(tp.op(id).kind == zero.op(id).kind);
    CHECK(tp.op(id).deps.size() == zero.op(id).deps.size());
  }
}

TEST_CASE("dtp reduces every module a later module consumes and adds it delta modules later") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const int64_t layers = 4;
  const int modules = 2 * layers;
  for (int delta : {1, 2, 5}) {
    const model::LayerGraph graph =
        model::build_layer_graph(arch, test::decode_workload(2, 512, layers), 8, dtp(delta));
    INFO("delta " << delta);
    // Module m is consumed by module m + 1 + delta, which must exist; the last delta modules send nothing.
    CHECK(count_named(graph, "partials.all_reduce") == modules - 1 - delta);
    CHECK(count_named(graph, "dtp.add_peers") == modules - 1 - delta);
    CHECK(count_named(graph, "final.all_reduce") == 1);
    // The first delta + 1 modules see only their own partials: module k adds module k - 1 - delta.
    for (const model::Op& op : graph.ops()) {
      if (op.name.find("dtp.add_peers_of_module") == std::string::npos) continue;
      const int source = std::stoi(op.name.substr(op.name.rfind("module") + 6));
      CHECK(op.module == source + 1 + delta);
    }
  }
}

TEST_CASE("dtp over all-gather moves every rank's partial, n/2 times the bytes of a ring all-reduce") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const auto w = test::decode_workload(8, 256, 2);
  const int tp = 8;
  model::Variant ring_ar = dtp(1);
  ring_ar.algorithm = model::CollectiveAlgorithm::kRing;
  model::Variant ring_ag = dtp(1, true);
  ring_ag.algorithm = model::CollectiveAlgorithm::kRing;
  const double partial = 8.0 * arch.hidden * 2;  // batch x hidden, bf16
  const double reductions = 2 * 2 - 1 - 1;       // modules - 1 - delta
  const double final_ar = 2.0 * (tp - 1) / tp * partial;
  CHECK(model::build_layer_graph(arch, w, tp, ring_ar).wire_bytes_per_rank() ==
        Approx(reductions * 2.0 * (tp - 1) / tp * partial + final_ar));
  CHECK(model::build_layer_graph(arch, w, tp, ring_ag).wire_bytes_per_rank() ==
        Approx(reductions * (tp - 1) * partial + final_ar));
}

TEST_CASE("decode GEMMs have one row per sequence and attention reads the whole KV cache") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-70b");
  const int64_t batch = 16, context = 4096;
  const model::LayerGraph graph =
      model::build_layer_graph(arch, test::decode_workload(batch, context, 1), 8, test::variant(TpMode::kTp));
  for (const model::Op& op : graph.ops()) {
    if (op.kind == model::OpKind::kGemm) CHECK(op.gemm.m == batch);
    if (op.kind != model::OpKind::kAttention) continue;
    const double kv_heads = 1, d = 128, e = 2;  // 8 KV heads over tp 8
    const double kv_bytes = 2.0 * batch * (context + 1) * kv_heads * d * e;
    const double q_bytes = batch * (64.0 / 8) * d * e;
    CHECK(op.bytes_read == Approx(kv_bytes + q_bytes));
    CHECK(op.flops == Approx(4.0 * batch * 8 * d * (context + 0.5)));
  }
}

TEST_CASE("each dtp all-reduce moves the bytes of tp's all-reduce, and the last delta modules send nothing") {
  const model::ArchSpec arch = model::load_model_preset("qwen3-8b");
  const int64_t layers = 3;
  const auto w = test::decode_workload(4, 128, layers);
  const double tp = model::build_layer_graph(arch, w, 8, test::variant(TpMode::kTp)).wire_bytes_per_rank();
  const double per_module = tp / (2 * layers);
  for (int delta : {1, 2, 3}) {
    // 2L - 1 - delta module reductions plus the final one: delta fewer than tp's 2L.
    const double expected = (2 * layers - delta) * per_module;
    CHECK(model::build_layer_graph(arch, w, 8, dtp(delta)).wire_bytes_per_rank() == Approx(expected));
  }
}

TEST_CASE("a decode step reads the rank's share of the weights and the KV cache") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const int tp = 8;
  const int64_t batch = 4, context = 2048, layers = 2;
  const model::LayerGraph graph =
      model::build_layer_graph(arch, test::decode_workload(batch, context, layers), tp, dtp(1));
  const double h = arch.hidden, d = arch.head_dim, e = 2;
  const double layer_params =
      h * (arch.heads + 2.0 * arch.kv_heads) * d + arch.heads * d * h + 3.0 * h * arch.intermediate;
  double weight_bytes = 0, kv_bytes = 0;
  for (const model::Op& op : graph.ops()) {
    if (op.kind == model::OpKind::kGemm) weight_bytes += static_cast<double>(op.gemm.k * op.gemm.n) * e;
    if (op.kind == model::OpKind::kAttention) {
      kv_bytes += op.bytes_read - batch * (arch.heads / tp) * d * e;  // minus the queries
    }
  }
  CHECK(weight_bytes == Approx(layers * layer_params / tp * e));
  const double kv_heads_per_rank = static_cast<double>(arch.kv_heads) / tp;
  CHECK(kv_bytes == Approx(layers * 2.0 * batch * (context + 1) * kv_heads_per_rank * d * e));
}
