// Op sequences of the attention and FFN modules, forward and backward, with FLOP and byte counts.
#include "model/decoder_layer.hpp"

namespace tpsim::model {
namespace {

std::vector<OpId> joined(std::vector<OpId> a, const std::vector<OpId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

ColumnLinear qkv_linear(const LayerContext& ctx) {
  return {"attn.norm", "attn.qkv_proj", (ctx.shard.q_heads + 2 * ctx.shard.kv_heads) * ctx.arch.head_dim};
}
RowLinear o_linear(const LayerContext& ctx) {
  return {"attn", "attn.o_proj", ctx.shard.q_heads * ctx.arch.head_dim};
}
ColumnLinear gate_up_linear(const LayerContext& ctx) {
  return {"ffn.norm", "ffn.gate_up_proj", 2 * ctx.shard.ffn};
}
RowLinear down_linear(const LayerContext& ctx) {
  return {"ffn", "ffn.down_proj", ctx.shard.ffn};
}

// The q and k columns RoPE (and QK-norm) rotate.
int64_t rotated_cols(const LayerContext& ctx) {
  return (ctx.shard.q_heads + ctx.shard.kv_heads) * ctx.arch.head_dim;
}

}  // namespace

ModuleInput attention_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const ModuleInput& input,
                              SavedModule* saved) {
  const int64_t d = ctx.arch.head_dim;
  const int64_t t = ctx.tokens;
  const double e = b.elem_bytes();
  const ColumnOutput qkv = tp.column_forward(b, ctx, qkv_linear(ctx), input);
  std::vector<OpId> rotated_input = qkv.output;
  const int64_t rotated = rotated_cols(ctx);
  const double rotated_bytes = static_cast<double>(t * rotated) * e;
  if (ctx.arch.qk_norm) {
    rotated_input = {b.memory("attn.qk_norm", rotated_bytes + 2.0 * d * e, rotated_bytes,
                              4.0 * static_cast<double>(t * rotated), shape_text(t, rotated), rotated_input)};
  }
  const OpId rope = b.memory("attn.rope", rotated_bytes, rotated_bytes, 6.0 * static_cast<double>(t * rotated),
                             shape_text(t, rotated), rotated_input);
  const OpId core = attention_core(b, ctx, rope);
  if (saved) *saved = SavedModule{input, qkv.gemm_input, qkv.output, {rope, core}, {core}};
  return tp.row_forward(b, ctx, o_linear(ctx), {core}, input);
}

ModuleInput ffn_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const ModuleInput& input,
                        SavedModule* saved) {
  const int64_t ffn = ctx.shard.ffn;
  const int64_t t = ctx.tokens;
  const double e = b.elem_bytes();
  const ColumnOutput gate_up = tp.column_forward(b, ctx, gate_up_linear(ctx), input);
  const OpId act = b.memory("ffn.swiglu", static_cast<double>(t * 2 * ffn) * e, static_cast<double>(t * ffn) * e,
                            4.0 * static_cast<double>(t * ffn), shape_text(t, ffn), gate_up.output);
  if (saved) *saved = SavedModule{input, gate_up.gemm_input, gate_up.output, {}, {act}};
  return tp.row_forward(b, ctx, down_linear(ctx), {act}, input);
}

ModuleInput attention_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const SavedModule& saved,
                               const ModuleInput& grad) {
  const int64_t d = ctx.arch.head_dim;
  const int64_t t = ctx.tokens;
  const double e = b.elem_bytes();
  const std::vector<OpId> d_core = tp.row_backward(b, ctx, o_linear(ctx), grad, saved.row_input);
  const OpId d_qkv = attention_core_backward(b, ctx, joined(joined(d_core, saved.inner), saved.column_output));
  const int64_t rotated = rotated_cols(ctx);
  const double rotated_bytes = static_cast<double>(t * rotated) * e;
  // RoPE's backward rotates the gradient back: the forward's traffic; QK-norm's reads its input too.
  OpId d_proj = b.memory("attn.rope.backward", rotated_bytes, rotated_bytes, 6.0 * static_cast<double>(t * rotated),
                         shape_text(t, rotated), {d_qkv});
  if (ctx.arch.qk_norm) {
    d_proj =
        b.memory("attn.qk_norm.backward", 2.0 * rotated_bytes + 2.0 * d * e, rotated_bytes,
                 6.0 * static_cast<double>(t * rotated), shape_text(t, rotated), joined({d_proj}, saved.column_output));
  }
  const OpId dx = tp.column_backward(b, ctx, qkv_linear(ctx), {d_proj}, saved.column_input, saved.input);
  return ModuleInput{residual_add(b, "attn.residual.backward", ctx.local_tokens, ctx.arch.hidden, {dx}, grad.ready)};
}

ModuleInput ffn_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const SavedModule& saved,
                         const ModuleInput& grad) {
  const int64_t ffn = ctx.shard.ffn;
  const int64_t t = ctx.tokens;
  const double e = b.elem_bytes();
  const std::vector<OpId> d_act = tp.row_backward(b, ctx, down_linear(ctx), grad, saved.row_input);
  // SwiGLU's backward reads gate, up and the incoming gradient, and writes the gradients of gate and up.
  const OpId d_gate_up =
      b.memory("ffn.swiglu.backward", static_cast<double>(t * 3 * ffn) * e, static_cast<double>(t * 2 * ffn) * e,
               8.0 * static_cast<double>(t * ffn), shape_text(t, 2 * ffn), joined(d_act, saved.column_output));
  const OpId dx = tp.column_backward(b, ctx, gate_up_linear(ctx), {d_gate_up}, saved.column_input, saved.input);
  return ModuleInput{residual_add(b, "ffn.residual.backward", ctx.local_tokens, ctx.arch.hidden, {dx}, grad.ready)};
}

}  // namespace tpsim::model
