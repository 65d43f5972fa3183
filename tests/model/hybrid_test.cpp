// Hybrid stacks (Qwen3-Next): the Gated DeltaNet layers' ops in prefill and decode, the gated full-attention
// layers, the shared expert beside the routed ones, their memory, and the scenario rules.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "base/input_error.hpp"
#include "model/graph/graph_builder.hpp"
#include "model/layers/linear_attention.hpp"
#include "model/memory/memory_footprint.hpp"
#include "model/memory/parameter_count.hpp"
#include "model/pipeline/pipeline_spec.hpp"
#include "model/scenario.hpp"
#include "test_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;
using test::op_named;

namespace {

constexpr int kTp = 4;
constexpr int kEp = 4;

model::ArchSpec qwen3_next() {
  return model::load_model_preset("qwen3-next-80b-a3b");
}

model::Workload with_experts(model::Workload w) {
  w.expert_parallel.degree = kEp;
  return w;
}

bool has_op(const model::LayerGraph& g, const std::string& name) {
  const auto& ops = g.ops();
  return std::any_of(ops.begin(), ops.end(), [&](const model::Op& op) { return op.name == name; });
}

// HBM bytes and FLOPs of the ops of the layers that run (or do not run) linear attention.
struct LayerTotals {
  double bytes = 0, flops = 0;
};
LayerTotals totals(const model::LayerGraph& g, const model::ArchSpec& arch, bool linear) {
  LayerTotals t;
  for (const model::Op& op : g.ops()) {
    if (op.module < 0 || op.module % 2 != 0 || arch.linear.is_linear(op.layer) != linear) continue;
    t.bytes += op.bytes_read + op.bytes_written;
    t.flops += op.flops;
  }
  return t;
}

model::LayerGraph decode_graph(int64_t context) {
  return model::build_layer_graph(qwen3_next(), with_experts(test::decode_workload(64, context, 8)), kTp,
                                  test::variant(model::TpMode::kSp));
}

}  // namespace

TEST_CASE("a hybrid decode step's linear-attention cost does not grow with context, its full-attention layers' does") {
  const model::ArchSpec arch = qwen3_next();
  const model::LayerGraph short_context = decode_graph(4096);
  const model::LayerGraph long_context = decode_graph(131072);
  const LayerTotals linear_short = totals(short_context, arch, true), linear_long = totals(long_context, arch, true);
  CHECK(linear_short.bytes > 0);
  CHECK(linear_long.bytes == linear_short.bytes);
  CHECK(linear_long.flops == linear_short.flops);
  // Layers 3 and 7 of the 8 read a KV cache of (context + 1) tokens: K and V of the rank's 1 KV head (2 over tp 4,
  // replicated), head_dim 256, bf16, for each of the 64 sequences.
  const double kv_growth = 2.0 * 64 * (131072 - 4096) * 1 * 256 * 2.0;
  const LayerTotals full_short = totals(short_context, arch, false), full_long = totals(long_context, arch, false);
  CHECK(full_long.bytes - full_short.bytes == Approx(2 * kv_growth).epsilon(1e-12));
}

TEST_CASE("a Gated DeltaNet decode step reads and writes each sequence's recurrent state once") {
  const model::ArchSpec arch = qwen3_next();
  const model::LayerGraph g = decode_graph(4096);
  const model::Op& core = op_named(g, "L0.linear_attn.delta_rule");
  CHECK(core.kind == model::OpKind::kAttention);
  CHECK(core.linear_scan.kernel == model::LinearKernel::kRecurrent);
  // Per rank: 32 / 4 value heads of 128 x 128 states, bf16 (vLLM's default), 64 sequences.
  const double state = 64.0 * (32 / kTp) * 128 * 128 * 2.0;
  // q and k of 16 / 4 key heads, v of 8 value heads, and the gates' inputs a, b; the output of 8 value heads.
  const double io = 64.0 * (2 * 4 * 128 + 8 * 128 + 2 * 8) * 2.0, output = 64.0 * 8 * 128 * 2.0;
  CHECK(core.bytes_read == Approx(io + state).epsilon(1e-12));
  CHECK(core.bytes_written == Approx(output + state).epsilon(1e-12));
  // The convolution reads and writes each sequence's last 3 inputs of its 2 x 512 + 1024 channels.
  const model::Op& conv = op_named(g, "L0.linear_attn.conv1d");
  const double channels = 2 * 4 * 128 + 8 * 128;
  CHECK(conv.bytes_written == Approx(64.0 * channels * 2.0 + 64.0 * 3 * channels * 2.0).epsilon(1e-12));
  CHECK_FALSE(has_op(g, "L0.attn.core"));
  CHECK(has_op(g, "L3.attn.core"));
}

TEST_CASE("a Gated DeltaNet prefill runs the chunked gated delta rule: its FLOPs, chunk steps and chains") {
  const model::ArchSpec arch = qwen3_next();
  model::Workload w = with_experts(test::forward_workload(2, 8192, 1));
  w.phase = model::Phase::kPrefill;
  const model::LayerGraph g = model::build_layer_graph(arch, w, kTp, test::variant(model::TpMode::kSp));
  const model::Op& core = op_named(g, "L0.linear_attn.delta_rule");
  CHECK(core.linear_scan.kernel == model::LinearKernel::kChunked);
  CHECK(core.linear_scan.chunk_steps == 8192 / 64);
  CHECK(core.linear_scan.chains == 2 * 8 * (128 / 64));  // sequences x value heads x value blocks of 64
  // Per token per value head with chunk 64, dk = dv = 128: 2 C (3 dk + 2 dv) + 6 dk dv + 2 C^2 / 3.
  const double per_token = 2.0 * 64 * (3 * 128 + 2 * 128) + 6.0 * 128 * 128 + 2.0 * 64 * 64 / 3.0;
  CHECK(model::chunked_delta_rule_flops_per_token(128, 128) == Approx(per_token).epsilon(1e-15));
  CHECK(core.flops == Approx(2.0 * 8192 * 8 * per_token).epsilon(1e-12));
  // The input projections: q, k, v, z (2 x 512 + 2 x 1024 columns per rank) and a, b (2 x 8) over every token.
  const model::Op& qkvz = op_named(g, "L0.linear_attn.in_proj.qkvz");
  CHECK(qkvz.gemm.n == 2 * 4 * 128 + 2 * 8 * 128);
  CHECK(qkvz.gemm.m == 2 * 8192);
  CHECK(op_named(g, "L0.linear_attn.in_proj.ba").gemm.n == 2 * 8);
  CHECK(op_named(g, "L0.linear_attn.out_proj").gemm.k == 8 * 128);
}

TEST_CASE("a gated full-attention layer writes its gate with q and turns a quarter of each head with RoPE") {
  const model::ArchSpec arch = qwen3_next();
  model::Workload w = with_experts(test::forward_workload(1, 4096, 4));
  const model::LayerGraph g = model::build_layer_graph(arch, w, kTp, test::variant(model::TpMode::kSp));
  // Layer 3 is full attention: 16 / 4 query heads with their gates, 1 KV head (replicated), head_dim 256.
  CHECK(op_named(g, "L3.attn.qkv_proj").gemm.n == (2 * 4 + 2 * 1) * 256);
  const model::Op& gate = op_named(g, "L3.attn.output_gate");
  CHECK(gate.bytes_read == Approx(2.0 * 4096 * 4 * 256 * 2.0).epsilon(1e-12));
  CHECK(op_named(g, "L3.attn.o_proj").gemm.k == 4 * 256);
  // RoPE over a quarter of the q and k columns (5 heads of 256).
  const double rotated = 4096.0 * (4 + 1) * 256 * 0.25;
  CHECK(op_named(g, "L3.attn.rope").bytes_read == Approx(rotated * 2.0).epsilon(1e-12));
}

TEST_CASE("the shared expert runs TP-sharded beside the routed experts on the router's normed rows") {
  const model::ArchSpec arch = qwen3_next();
  const model::LayerGraph g = model::build_layer_graph(arch, with_experts(test::forward_workload(1, 4096, 1)), kTp,
                                                       test::variant(model::TpMode::kSp));
  const model::Op& gate_up = op_named(g, "L0.moe.shared_expert.gate_up_proj");
  CHECK(gate_up.gemm.m == 4096);  // gathered under sequence parallelism
  CHECK(gate_up.gemm.n == 2 * 512 / kTp);
  CHECK(op_named(g, "L0.moe.shared_expert.down_proj").gemm.k == 512 / kTp);
  CHECK(has_op(g, "L0.moe.shared_expert.gate"));
  CHECK(has_op(g, "L0.moe.shared_expert.residual"));
  // One norm for both branches: the shared expert reads the router's.
  const auto& ops = g.ops();
  CHECK(std::count_if(ops.begin(), ops.end(), [](const model::Op& op) { return op.name == "L0.moe.norm"; }) == 1);
  // Its parameters: 3 x hidden x 512 / tp and the gate's hidden, beside the router and the rank's experts.
  const model::TpShard s = model::shard_for_tp(arch, kTp, kEp);
  const model::TpShard no_shared = [&] {
    model::ArchSpec a = arch;
    a.moe.shared_expert_ffn = 0;
    return model::shard_for_tp(a, kTp, kEp);
  }();
  CHECK(model::linear_parameters_per_layer(arch, s, {true, true}) -
            model::linear_parameters_per_layer(arch, no_shared, {true, true}) ==
        Approx(3.0 * 2048 * 512 / kTp + 2048));
}

TEST_CASE("a shared expert's backward sums its branch into the norm's backward with the router's") {
  // Qwen1.5-MoE-A2.7B's shapes (qwen2_moe): 60 experts, 4 per token, a 5632-wide shared expert.
  const std::string config = R"({"model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632,
    "num_attention_heads": 16, "num_key_value_heads": 16, "num_hidden_layers": 24, "vocab_size": 151936,
    "num_experts": 60, "num_experts_per_tok": 4, "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632, "decoder_sparse_step": 1, "mlp_only_layers": []})";
  const model::ArchSpec arch = model::parse_hf_config(config, "qwen2_moe.json", "qwen1.5-moe");
  CHECK(arch.qkv_bias);
  CHECK(arch.moe.shared_expert_ffn == 5632);
  model::Workload w = test::train_workload(1, 2048, 1);
  w.expert_parallel.degree = 4;
  const model::LayerGraph g = model::build_layer_graph(arch, w, 2, test::variant(model::TpMode::kSp));
  const model::Op& wgrad = op_named(g, "L0.moe.shared_expert.gate_up_proj.wgrad");
  CHECK(wgrad.gemm.n == 2 * 5632 / 2);  // [hidden, tokens] x [tokens, the rank's gate and up columns]
  CHECK(wgrad.gemm.k == 2048);
  const model::Op& norm = op_named(g, "L0.moe.norm.backward");
  // It waits for the shared expert's reduce-scattered input gradient and its gate's, and for the router's.
  std::vector<std::string> reads;
  for (const model::Dep& dep : norm.deps) reads.push_back(g.op(dep.op).name);
  const auto reads_one = [&](const std::string& name) {
    return std::find(reads.begin(), reads.end(), name) != reads.end();
  };
  CHECK(reads_one("L0.moe.router.dgrad"));
  CHECK(reads_one("L0.moe.shared_expert.gate.backward"));
  CHECK(std::any_of(reads.begin(), reads.end(), [](const std::string& name) {
    return name.find("shared_expert.gate_up_proj.dgrad") != std::string::npos;
  }));
}

TEST_CASE("a hybrid model's KV cache holds only its full-attention layers, and its recurrent states the rest") {
  const model::ArchSpec arch = qwen3_next();
  const model::Workload w = with_experts(test::decode_workload(64, 32768, 48));
  const model::MemoryFootprint m = model::memory_footprint(arch, w, test::variant(model::TpMode::kSp), kTp);
  const double kv = 2.0 * 12 * 1 * 256 * 64 * (32768 + 1) * 2.0;  // 12 layers, 1 KV head per rank
  const double state = 36.0 * 64 * (8 * 128 * 128 * 2.0 + 3 * (2 * 4 * 128 + 8 * 128) * 2.0);
  CHECK(m.kv_cache_bytes == Approx(kv + state).epsilon(1e-12));
}

TEST_CASE("a hybrid stack trains: the Gated DeltaNet backward mirrors its forward, each layer syncs its own size") {
  const model::ArchSpec arch = qwen3_next();
  model::Workload w = test::train_workload(1, 4096, 4);
  w.expert_parallel.degree = kEp;
  const model::LayerGraph g = model::build_layer_graph(arch, w, kTp, test::variant(model::TpMode::kSp));
  const model::Op& forward = op_named(g, "L0.linear_attn.delta_rule");
  const model::Op& backward = op_named(g, "L0.linear_attn.delta_rule.backward");
  CHECK(backward.stage == model::OpStage::kBackward);
  CHECK(backward.linear_scan.kernel == model::LinearKernel::kChunked);
  CHECK(backward.linear_scan.chunk_steps == forward.linear_scan.chunk_steps);
  CHECK(backward.flops == forward.flops);  // the profile's backward_ratio scales its time
  for (const char* name :
       {"L0.linear_attn.gated_norm.backward", "L0.linear_attn.conv1d.backward", "L0.linear_attn.in_proj.wgrad.qkvz",
        "L0.linear_attn.out_proj.wgrad", "L3.attn.output_gate.backward", "L3.attn.core.backward"}) {
    INFO(name);
    CHECK(has_op(g, name));
  }
  // A linear-attention layer and a full-attention layer hold different parameters.
  const model::TpShard s = model::shard_for_tp(arch, kTp, kEp);
  CHECK(model::layer_parameters_at(arch, s, 0) != model::layer_parameters_at(arch, s, 3));
  CHECK(model::layer_parameters_per_rank(arch, s, {0, 4}) ==
        Approx(3 * model::layer_parameters_at(arch, s, 0) + model::layer_parameters_at(arch, s, 3)));
}

TEST_CASE("a pipeline chunk of a hybrid stack runs each layer as the model numbers it") {
  // Qwen3-Next runs full attention in every 4th layer (3, 7, ...): a chunk from layer 3 starts with one.
  const model::ArchSpec arch = qwen3_next();
  model::Workload w = with_experts(test::train_workload(1, 4096, 1));
  w.layers = 2;
  w.first_layer = 3;
  const model::LayerGraph from_three = model::build_layer_graph(arch, w, kTp, test::variant(model::TpMode::kSp));
  CHECK(has_op(from_three, "L0.attn.core"));  // named in the chunk's program, of the model's layer 3
  CHECK(has_op(from_three, "L1.linear_attn.delta_rule"));
  CHECK_FALSE(has_op(from_three, "L0.linear_attn.delta_rule"));
  w.first_layer = 0;
  const model::LayerGraph from_zero = model::build_layer_graph(arch, w, kTp, test::variant(model::TpMode::kSp));
  CHECK(has_op(from_zero, "L0.linear_attn.delta_rule"));
  CHECK_FALSE(has_op(from_zero, "L0.attn.core"));
  // Its memory holds its own layers' parameters: one full-attention and one linear-attention layer.
  const model::TpShard s = model::shard_for_tp(arch, kTp, kEp);
  w.first_layer = 3;
  w.data_parallel = {};
  const double expected = model::layer_parameters_at(arch, s, 3) + model::layer_parameters_at(arch, s, 4);
  CHECK(model::layer_parameters_per_rank(arch, s, {3, 2}) == Approx(expected));
  CHECK(model::layer_parameters_per_rank(arch, s, {0, 2}) == Approx(2 * model::layer_parameters_at(arch, s, 0)));
}

TEST_CASE("chunks share a simulation only when their layers are of the same kinds, layer for layer") {
  const model::ArchSpec arch = qwen3_next();
  // Chunks of 4 layers from 0, 4 and 8 each hold three linear-attention layers, then a full-attention one.
  CHECK(model::same_program(arch, {4, false, false, 4}, {4, false, false, 8}));
  CHECK_FALSE(model::same_program(arch, {4, false, false, 4}, {4, false, false, 5}));
  CHECK_FALSE(model::same_program(arch, {4, false, false, 4}, {4, true, false, 8}));
  const model::ArchSpec dense = model::load_model_preset("llama-3.1-8b");
  CHECK(model::same_program(dense, {8, false, false, 8}, {8, false, false, 17}));
}
