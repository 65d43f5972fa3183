// DeepSeek's multi-head latent attention (MLA): the down and up projections' shapes under TP, the naive and
// absorbed attention kernels, the latent KV cache every rank holds, the latent gradients' all-reduce, and the
// parameters that add up to DeepSeek-V3's published 671B.
#include <catch2/catch.hpp>

#include <string>

#include "model/graph/graph_builder.hpp"
#include "model/memory/memory_footprint.hpp"
#include "model/memory/parameter_count.hpp"
#include "test_support.hpp"

using namespace tpsim;
using test::op_named;

namespace {

constexpr int kTp = 8;

model::ArchSpec deepseek_v3() {
  return model::load_model_preset("deepseek-v3");
}

bool has_op(const model::LayerGraph& g, const std::string& name) {
  for (const model::Op& op : g.ops()) {
    if (op.name == name) return true;
  }
  return false;
}

model::Workload one_dense_layer_train(int64_t seq_len) {
  return test::train_workload(1, seq_len, 1);  // layer 0: MLA and a dense FFN
}

}  // namespace

TEST_CASE("an MLA layer projects the gathered rows down to replicated latents and each rank's heads up from them") {
  const model::ArchSpec arch = deepseek_v3();
  const int64_t tokens = 4096;
  const model::LayerGraph g =
      model::build_layer_graph(arch, one_dense_layer_train(tokens), kTp, test::variant(model::TpMode::kSp));
  const int64_t heads = 128 / kTp;
  // The down projection: every token (gathered), the query latent, the KV latent and the shared rotary key.
  const model::Op& down = op_named(g, "L0.attn.latent_proj");
  CHECK(down.gemm.m == tokens);
  CHECK(down.gemm.n == 1536 + 512 + 64);
  CHECK(down.gemm.k == 7168);
  const model::Op& q_up = op_named(g, "L0.attn.q_up_proj");
  CHECK(q_up.gemm.n == heads * (128 + 64));
  CHECK(q_up.gemm.k == 1536);
  const model::Op& kv_up = op_named(g, "L0.attn.kv_up_proj");
  CHECK(kv_up.gemm.n == heads * (128 + 128));
  CHECK(kv_up.gemm.k == 512);
  CHECK(op_named(g, "L0.attn.o_proj").gemm.k == heads * 128);
  // Causal attention of 192-wide queries and keys and 128-wide values: 2 heads (192 + 128) s^2 / 2 FLOPs.
  const double s = static_cast<double>(tokens);
  CHECK(op_named(g, "L0.attn.core").flops == Approx(2.0 * heads * (192 + 128) * s * s / 2.0));
  CHECK(op_named(g, "L0.attn.core.backward").flops == Approx(2.5 * op_named(g, "L0.attn.core").flops));
  CHECK_FALSE(has_op(g, "L0.attn.q_absorb"));  // training runs the naive form
}

TEST_CASE("an MLA backward all-reduces the latents' gradients over the TP group instead of reducing the hidden state") {
  const model::ArchSpec arch = deepseek_v3();
  const int64_t tokens = 4096;
  const model::LayerGraph g =
      model::build_layer_graph(arch, one_dense_layer_train(tokens), kTp, test::variant(model::TpMode::kSp));
  const model::Op& reduce = op_named(g, "L0.attn.latent_proj.grad.all_reduce");
  CHECK(reduce.collective == model::CollectiveKind::kAllReduce);
  CHECK(reduce.tensor_bytes == Approx(tokens * (1536 + 512 + 64) * 2.0));
  // Every column replicated: the down projection's data gradient is whole, nothing reduce-scatters it.
  CHECK(op_named(g, "L0.attn.latent_proj.dgrad").gemm.m == tokens);
  for (const model::Op& op : g.ops()) {
    INFO(op.name);
    CHECK(op.name.find("attn.latent_proj.dgrad.reduce_scatter") == std::string::npos);
  }
  // DeepSeek-V2-Lite projects its queries straight from the hidden state, sharded by head: only the KV latent
  // and the rotary key are all-reduced, and the data gradient's partial sums reduce-scatter as a column linear's.
  const model::ArchSpec lite = model::load_model_preset("deepseek-v2-lite");
  const model::LayerGraph lite_graph =
      model::build_layer_graph(lite, one_dense_layer_train(tokens), 2, test::variant(model::TpMode::kSp));
  CHECK(op_named(lite_graph, "L0.attn.latent_proj").gemm.n == 8 * 192 + 512 + 64);
  CHECK(op_named(lite_graph, "L0.attn.latent_proj.grad.all_reduce").tensor_bytes == Approx(tokens * 576 * 2.0));
  bool scattered = false;
  for (const model::Op& op : lite_graph.ops()) {
    scattered = scattered || (op.collective == model::CollectiveKind::kReduceScatter &&
                              op.name.find("attn.latent_proj.dgrad") != std::string::npos);
  }
  CHECK(scattered);
}

TEST_CASE("an MLA decode step attends over the cached latents once for all of a rank's heads") {
  const model::ArchSpec arch = deepseek_v3();
  const int64_t batch = 32, context = 8192;
  const auto core_of = [&](int tp) {
    const model::LayerGraph g =
        model::build_layer_graph(arch, test::decode_workload(batch, context, 1), tp, test::variant(model::TpMode::kTp));
    CHECK(has_op(g, "L0.attn.q_absorb"));
    CHECK(has_op(g, "L0.attn.v_absorb"));
    CHECK_FALSE(has_op(g, "L0.attn.kv_up_proj"));
    return op_named(g, "L0.attn.core");
  };
  for (const int tp : {1, 8}) {
    INFO("tp " << tp);
    const model::Op core = core_of(tp);
    const double heads = 128.0 / tp;
    // Reads each head's absorbed query (576 wide) and the sequences' cached latents and rotary keys (576 per
    // token): the cache once, whatever the rank's heads.
    const double queries = batch * heads * 576 * 2.0, cache = batch * (context + 1.0) * 576 * 2.0;
    CHECK(core.bytes_read == Approx(queries + cache));
    CHECK(core.flops == Approx(2.0 * batch * heads * (576 + 512) * (context + 0.5)));
  }
}

TEST_CASE("an MLA model's KV cache holds one latent and rotary key per token and layer on every TP rank") {
  const model::ArchSpec arch = deepseek_v3();
  model::Workload w = test::decode_workload(16, 4096, 61);
  w.expert_parallel.degree = 8;
  const auto cache = [&](int tp) {
    return model::memory_footprint(arch, w, test::variant(model::TpMode::kTp), tp).kv_cache_bytes;
  };
  const double expected = 61.0 * 576 * 16 * (4096 + 1) * 2.0;
  CHECK(cache(8) == Approx(expected));
  CHECK(cache(2) == Approx(expected));  // not split over the heads' ranks
}

TEST_CASE("DeepSeek-V3's parameters add up to its published 671B, 37B of them active per token") {
  const model::ArchSpec arch = deepseek_v3();
  const model::TpShard whole = model::shard_for_tp(arch, 1, 1);
  const double total =
      model::layer_parameters_per_rank(arch, whole, {0, 61}) + model::embedding_parameters_per_rank(arch, 1);
  // DeepSeek-V3 technical report: 671B total (the main model; its MTP module's 14B aside), 37B activated.
  CHECK(total == Approx(671e9).epsilon(0.002));
  const double experts_per_layer = 256.0 * 3 * 7168 * 2048;
  const double active = total - 58 * experts_per_layer * (1.0 - 8.0 / 256);
  CHECK(active == Approx(37e9).epsilon(0.02));
}
