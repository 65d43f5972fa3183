// Tensor identities of a layer graph: producers, consumers and bytes, and the TP strategies behind them.
#include <catch2/catch.hpp>

#include <algorithm>

#include "model/graph/graph_builder.hpp"
#include "model/parallel/tp_strategy.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::TpMode;

namespace {

model::OpId find_op(const model::LayerGraph& g, const std::string& name) {
  for (model::OpId id = 0; id < g.size(); ++id) {
    if (g.op(id).name == name) return id;
  }
  FAIL("no op named " << name);
  return 0;
}

}  // namespace

TEST_CASE("under sp the all-gathered input is read by the QKV GEMM alone, and holds every token") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const int tp = 8;
  const int64_t tokens = 2 * 1024;
  const auto g = model::build_layer_graph(arch, test::forward_workload(2, 1024, 1), tp, test::variant(TpMode::kSp));
  const model::OpId gathered = find_op(g, "L0.attn.qkv_proj.all_gather");
  const model::OpId qkv = find_op(g, "L0.attn.qkv_proj");
  CHECK(g.consumers()[gathered] == std::vector<model::OpId>{qkv});
  CHECK(g.data_inputs(qkv) == std::vector<model::OpId>{gathered});
  CHECK(g.op(gathered).output_bytes == Approx(static_cast<double>(tokens * arch.hidden) * 2.0));
  // The reduce-scatter leaves the rank its shard: tokens / tp rows.
  const model::OpId scattered = find_op(g, "L0.attn.o_proj.reduce_scatter");
  CHECK(g.op(scattered).output_bytes == Approx(static_cast<double>(tokens / tp * arch.hidden) * 2.0));
  const model::OpId residual = find_op(g, "L0.attn.residual");
  CHECK(g.consumers()[scattered] == std::vector<model::OpId>{residual});
}

TEST_CASE("same-stream ordering is not a data dependency: a GEMM's consumers are the ops that read its output") {
  const model::ArchSpec arch = model::load_model_preset("qwen3-8b");
  const auto g = model::build_layer_graph(arch, test::forward_workload(1, 512, 2), 4, test::variant(TpMode::kTp));
  const model::OpId qkv = find_op(g, "L0.attn.qkv_proj");
  const model::OpId qk_norm = find_op(g, "L0.attn.qk_norm");
  CHECK(g.consumers()[qkv] == std::vector<model::OpId>{qk_norm});
  const model::TpShard s = model::shard_for_tp(arch, 4);
  CHECK(g.op(qkv).output_bytes ==
        Approx(512.0 * static_cast<double>((s.q_heads + 2 * s.kv_heads) * arch.head_dim) * 2));
  // The norm after it follows on the compute stream, but only the attention core reads the RoPE output.
  const model::OpId rope = find_op(g, "L0.attn.rope");
  CHECK(g.consumers()[rope] == std::vector<model::OpId>{find_op(g, "L0.attn.core")});
}

TEST_CASE("every op's output is read by some later op except the pass's final outputs") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  for (const TpMode mode : {TpMode::kTp, TpMode::kSp, TpMode::kNoComm}) {
    const auto g = model::build_layer_graph(arch, test::forward_workload(1, 1024, 2), 8, test::variant(mode));
    const auto readers = g.consumers();
    for (model::OpId id = 0; id + 1 < g.size(); ++id) {
      INFO(model::to_string(mode) << " " << g.op(id).name);
      CHECK_FALSE(readers[id].empty());
      for (const model::OpId reader : readers[id]) CHECK(reader > id);
    }
  }
}

TEST_CASE("each TP mode's strategy says whether the residual stream is sharded on the sequence") {
  CHECK(model::make_tp_strategy(test::variant(TpMode::kSp), 2)->shards_sequence(1024, 8));
  CHECK(model::make_tp_strategy(test::variant(TpMode::kAsync, 8), 2)->shards_sequence(1024, 8));
  CHECK_FALSE(model::make_tp_strategy(test::variant(TpMode::kTp), 2)->shards_sequence(1024, 8));
  CHECK_FALSE(model::make_tp_strategy(test::variant(TpMode::kDtp), 2)->shards_sequence(1024, 8));
  CHECK(model::make_tp_strategy(test::variant(TpMode::kNoComm), 2)->shards_sequence(1024, 8));
  CHECK_FALSE(model::make_tp_strategy(test::variant(TpMode::kNoComm), 2)->shards_sequence(1023, 8));
}
