// Per-layer op sequences: attention module (norm, QKV, QK-norm, RoPE, attention, O-proj, residual) and
// FFN module (norm, gate/up, SwiGLU, down, residual); the variant's TP strategy issues the linears and
// the communication around them.
#include "model/graph_builder.hpp"

#include <memory>

#include "model/layer_ops.hpp"
#include "model/program_builder.hpp"
#include "model/tp_strategy.hpp"

namespace tpsim::model {
namespace {

ModuleInput attention_module(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const ModuleInput& input) {
  const int64_t d = ctx.arch.head_dim;
  const int64_t hq = ctx.shard.q_heads;
  const int64_t hkv = ctx.shard.kv_heads;
  const int64_t t = ctx.tokens;
  const double e = b.elem_bytes();
  std::vector<OpId> qkv = tp.column_forward(b, ctx, {"attn.norm", "attn.qkv_proj", (hq + 2 * hkv) * d}, input);
  const int64_t rotated = (hq + hkv) * d;  // q and k columns
  const double rotated_bytes = static_cast<double>(t * rotated) * e;
  if (ctx.arch.qk_norm) {
    qkv = {b.memory("attn.qk_norm", rotated_bytes + 2.0 * d * e, rotated_bytes, 4.0 * static_cast<double>(t * rotated),
                    shape_text(t, rotated), qkv)};
  }
  const OpId rope = b.memory("attn.rope", rotated_bytes, rotated_bytes, 6.0 * static_cast<double>(t * rotated),
                             shape_text(t, rotated), qkv);
  const OpId core = attention_core(b, ctx, rope);
  return tp.row_forward(b, ctx, {"attn", "attn.o_proj", hq * d}, {core}, input);
}

ModuleInput ffn_module(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const ModuleInput& input) {
  const int64_t ffn = ctx.shard.ffn;
  const int64_t t = ctx.tokens;
  const double e = b.elem_bytes();
  const std::vector<OpId> gate_up = tp.column_forward(b, ctx, {"ffn.norm", "ffn.gate_up_proj", 2 * ffn}, input);
  const OpId act = b.memory("ffn.swiglu", static_cast<double>(t * 2 * ffn) * e, static_cast<double>(t * ffn) * e,
                            4.0 * static_cast<double>(t * ffn), shape_text(t, ffn), gate_up);
  return tp.row_forward(b, ctx, {"ffn", "ffn.down_proj", ffn}, {act}, input);
}

}  // namespace

LayerGraph build_pass_graph(const ArchSpec& arch, const Workload& workload, const Pass& pass, int tp,
                            const Variant& variant) {
  if (workload.phase == Phase::kOps) {
    return build_op_list_graph(workload.ops, tp, workload.dtype, variant.algorithm, variant.protocol);
  }
  LayerContext ctx;
  ctx.arch = arch;
  ctx.shard = shard_for_tp(arch, tp);
  ctx.workload = workload;
  ctx.pass = pass;
  ctx.variant = variant;
  ctx.tokens = pass.tokens();
  const std::unique_ptr<TpStrategy> strategy = make_tp_strategy(variant, static_cast<int>(2 * workload.layers));
  ctx.sequence_sharded = strategy->shards_sequence(ctx.tokens, tp);
  ctx.local_tokens = ctx.sequence_sharded ? ctx.tokens / tp : ctx.tokens;
  ctx.elem_bytes = dtype_bytes(workload.dtype);
  strategy->check(ctx);

  LayerGraph graph(tp);
  ProgramBuilder builder(graph, ctx.elem_bytes);
  builder.set_collective_algorithm(variant.algorithm);
  builder.set_collective_protocol(variant.protocol);
  builder.set_gemm_fp8(workload.dtype == Dtype::kFp8);
  builder.set_attention_fp8(workload.attention_dtype == Dtype::kFp8);
  ModuleInput hidden;
  for (int64_t layer = 0; layer < workload.layers; ++layer) {
    builder.set_layer(static_cast<int>(layer));
    builder.set_module(static_cast<int>(2 * layer));
    hidden = attention_module(builder, ctx, *strategy, strategy->enter_module(builder, ctx, hidden));
    builder.set_module(static_cast<int>(2 * layer + 1));
    hidden = ffn_module(builder, ctx, *strategy, strategy->enter_module(builder, ctx, hidden));
  }
  builder.set_module(-1);
  const OpId normed = rms_norm(builder, "final.norm", ctx.local_tokens, arch.hidden, hidden.deps());
  strategy->finish_pass(builder, ctx, normed);
  return graph;
}

LayerGraph build_layer_graph(const ArchSpec& arch, const Workload& workload, int tp, const Variant& variant) {
  return build_pass_graph(arch, workload, primary_pass(workload), tp, variant);
}

}  // namespace tpsim::model
