// Op sequence of the multi-head latent attention module, with FLOP and byte counts.
#include "model/layers/latent_attention.hpp"

namespace tpsim::model {
namespace {

// One rank's shapes: its heads and the latent widths.
struct LatentShape {
  int64_t heads, qk, nope, rope, value, q_rank, kv_rank;
  explicit LatentShape(const LayerContext& ctx)
      : heads(ctx.shard.q_heads),
        qk(ctx.arch.latent.qk_head_dim()),
        nope(ctx.arch.latent.nope_head_dim),
        rope(ctx.arch.latent.rope_head_dim),
        value(ctx.arch.latent.value_head_dim),
        q_rank(ctx.arch.latent.q_lora_rank),
        kv_rank(ctx.arch.latent.kv_lora_rank) {}
  // The down projection's columns: the query latent (or, without one, the rank's heads' queries), the KV latent
  // and the shared rotary key.
  int64_t down_cols() const { return (q_rank > 0 ? q_rank : heads * qk) + kv_rank + rope; }
  int64_t cache_width() const { return kv_rank + rope; }
};

ColumnLinear down_proj(const LayerContext& ctx) {
  return {"attn.norm", "attn.latent_proj", LatentShape(ctx).down_cols()};
}
RowLinear o_proj(const LayerContext& ctx) {
  const LatentShape s(ctx);
  return {"attn", "attn.o_proj", s.heads * s.value};
}
GemmShape q_up_shape(const LayerContext& ctx) {
  const LatentShape s(ctx);
  return {ctx.tokens, s.heads * s.qk, s.q_rank};
}
// The naive form's keys and values of every token attended: the pass's new ones, and in inference the cached
// latents too, read back and projected up.
GemmShape kv_up_shape(const LayerContext& ctx) {
  const LatentShape s(ctx);
  const int64_t rows = ctx.tokens + (ctx.workload.is_inference() ? ctx.pass.batch * ctx.pass.cached_tokens : 0);
  return {rows, s.heads * (s.nope + s.value), s.kv_rank};
}

std::string attention_shape(const LayerContext& ctx, const std::string& form) {
  const LatentShape s(ctx);
  return "b=" + std::to_string(ctx.pass.batch) + " new=" + std::to_string(ctx.pass.new_tokens) +
         " cached=" + std::to_string(ctx.pass.cached_tokens) + " heads=" + std::to_string(s.heads) + " " + form;
}

// RoPE over the queries' and the shared key's rotary parts (fused, as DeepSeek's implementations run it).
OpId latent_rotary(ProgramBuilder& b, const LayerContext& ctx, const std::string& name, const std::vector<OpId>& deps) {
  const LatentShape s(ctx);
  const auto elements = static_cast<double>(ctx.tokens * (s.heads + 1) * s.rope);
  const double e = b.elem_bytes();
  return b.memory(name, elements * e, elements * e, 6.0 * elements, shape_text(ctx.tokens, (s.heads + 1) * s.rope),
                  deps);
}

// Causal attention FLOPs of b sequences of q new tokens after c cached ones: 2 b heads (qk + v) (q c + q^2 / 2)
// for QK^T of width qk and PV of width v.
double causal_flops(const LayerContext& ctx, double heads, double qk, double v) {
  const auto batch = static_cast<double>(ctx.pass.batch), q = static_cast<double>(ctx.pass.new_tokens),
             c = static_cast<double>(ctx.pass.cached_tokens);
  return 2.0 * batch * heads * (qk + v) * (q * c + q * q / 2.0);
}

// Its causal diagonal (Op::causal_inverse_length): the q new queries' rows over twice the q c + q^2 / 2 pairs.
double causal_inverse_length(const LayerContext& ctx) {
  const auto q = static_cast<double>(ctx.pass.new_tokens), c = static_cast<double>(ctx.pass.cached_tokens);
  return 1.0 / (2.0 * c + q);
}

// The naive form (training, prefill): every head's own keys and values, FlashAttention over qk-wide queries and
// keys and value-wide values. Inference appends the new tokens' latents to the cache.
OpId naive_attention(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& deps) {
  const LatentShape s(ctx);
  const double e = b.elem_bytes(), qkv = b.attention_fp8() ? kFp8Bytes : e;
  const auto batch = static_cast<double>(ctx.pass.batch), q = static_cast<double>(ctx.pass.new_tokens),
             c = static_cast<double>(ctx.pass.cached_tokens), heads = static_cast<double>(s.heads);
  const auto qk = static_cast<double>(s.qk), v = static_cast<double>(s.value);
  const double queries = batch * q * heads * qk * qkv, output = batch * q * heads * v * e;
  const double keys_values = batch * (c + q) * heads * (qk + v) * qkv;
  const double append = ctx.workload.is_inference() ? batch * q * static_cast<double>(s.cache_width()) * qkv : 0.0;
  return b.attention("attn.core", causal_flops(ctx, heads, qk, v), causal_inverse_length(ctx), queries + keys_values,
                     output + append, output, attention_shape(ctx, "naive") + (b.attention_fp8() ? " fp8" : ""), deps);
}

// The absorbed form (decode): each head's query turned into the latent space (q_nope W_UK), attention over the
// cached latents and rotary keys shared by every head (multi-query, cache_width-wide keys, kv_rank-wide values),
// the output turned back per head (W_UV).
OpId absorbed_attention(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& deps) {
  const LatentShape s(ctx);
  const double e = b.elem_bytes(), qkv = b.attention_fp8() ? kFp8Bytes : e;
  const auto batch = static_cast<double>(ctx.pass.batch), q = static_cast<double>(ctx.pass.new_tokens),
             c = static_cast<double>(ctx.pass.cached_tokens), heads = static_cast<double>(s.heads);
  const auto width = static_cast<double>(s.cache_width()), values = static_cast<double>(s.kv_rank);
  const OpId absorbed_q = b.gemm("attn.q_absorb", GemmShape{ctx.tokens, s.kv_rank, s.nope, s.heads}, deps);
  b.between_attention_parts();  // SGLang's attention prepare ends with the queries' absorption
  const double queries = batch * q * heads * width * qkv, output = batch * q * heads * values * e;
  const double cache = batch * (c + q) * width * qkv, append = batch * q * width * qkv;
  const OpId core = b.attention("attn.core", causal_flops(ctx, heads, width, values), causal_inverse_length(ctx),
                                queries + cache, output + append, output,
                                attention_shape(ctx, "absorbed") + (b.attention_fp8() ? " fp8" : ""), {absorbed_q});
  return b.gemm("attn.v_absorb", GemmShape{ctx.tokens, s.value, s.kv_rank, s.heads}, {core});
}

}  // namespace

bool absorbs_latent_attention(const LayerContext& ctx) {
  return ctx.workload.is_inference() && ctx.pass.new_tokens == 1;
}

ModuleInput latent_attention_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp,
                                     const ModuleInput& input, SavedModule* saved) {
  const LatentShape s(ctx);
  const ColumnOutput latent = tp.column_forward(b, ctx, down_proj(ctx), input);
  std::vector<OpId> queries = latent.output;
  if (s.q_rank > 0) {
    const OpId q_norm = rms_norm(b, "attn.q_latent_norm", ctx.tokens, s.q_rank, latent.output);
    queries = {b.gemm("attn.q_up_proj", q_up_shape(ctx), {q_norm})};
  }
  const OpId kv_norm = rms_norm(b, "attn.kv_latent_norm", ctx.tokens, s.kv_rank, latent.output);
  std::vector<OpId> rotary_inputs = queries;
  rotary_inputs.insert(rotary_inputs.end(), latent.output.begin(), latent.output.end());
  const OpId rope = latent_rotary(b, ctx, "attn.rope", rotary_inputs);
  OpId core;
  std::vector<OpId> inner;
  if (absorbs_latent_attention(ctx)) {
    core = absorbed_attention(b, ctx, {rope, kv_norm});
  } else {
    const OpId kv = b.gemm("attn.kv_up_proj", kv_up_shape(ctx), {kv_norm});
    b.between_attention_parts();
    core = naive_attention(b, ctx, {rope, kv});
    inner = {rope, kv, core};
  }
  if (saved) *saved = SavedModule{input, latent.gemm_input, latent.output, inner, {core}, {}};
  return tp.row_forward(b, ctx, o_proj(ctx), {core}, input);
}

ModuleInput latent_attention_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp,
                                      const SavedModule& saved, const ModuleInput& grad) {
  const LatentShape s(ctx);
  const double e = b.elem_bytes();
  const OpId rope = saved.inner.at(0), kv = saved.inner.at(1), core = saved.inner.at(2);
  std::vector<OpId> d_core = tp.row_backward(b, ctx, o_proj(ctx), grad, saved.row_input);
  d_core.insert(d_core.end(), {rope, kv, core});
  // FlashAttention's backward (kAttentionBackwardFlopRatio x the forward's FLOPs): reads Q, K, V, O and dO, writes dQ,
  // dK and dV.
  const auto t = static_cast<double>(ctx.tokens), heads = static_cast<double>(s.heads);
  const double qk_side = t * heads * static_cast<double>(s.qk) * e,
               v_side = t * heads * static_cast<double>(s.value) * e;
  const OpId d_attention = b.attention(
      "attn.core.backward",
      kAttentionBackwardFlopRatio * causal_flops(ctx, heads, static_cast<double>(s.qk), static_cast<double>(s.value)),
      causal_inverse_length(ctx), 2.0 * qk_side + 3.0 * v_side, 2.0 * qk_side + v_side, 2.0 * qk_side + v_side,
      attention_shape(ctx, "naive"), d_core);
  const OpId d_rope = latent_rotary(b, ctx, "attn.rope.backward", {d_attention});
  // The KV up projection's gradients, then the KV latent norm's backward.
  const GemmShape kv_up = kv_up_shape(ctx);
  const OpId d_kv_latent = b.gemm("attn.kv_up_proj.dgrad", data_gradient_shape(kv_up), {d_attention});
  weight_gradient(b, "attn.kv_up_proj", kv_up, {d_attention}, saved.column_output);
  const double kv_bytes = t * static_cast<double>(s.kv_rank) * e;
  std::vector<OpId> d_latent = {b.memory("attn.kv_latent_norm.backward", 2.0 * kv_bytes, kv_bytes,
                                         6.0 * t * static_cast<double>(s.kv_rank), shape_text(ctx.tokens, s.kv_rank),
                                         joined({d_kv_latent}, saved.column_output))};
  d_latent.push_back(d_rope);
  if (s.q_rank > 0) {
    const GemmShape q_up = q_up_shape(ctx);
    const OpId d_q_latent = b.gemm("attn.q_up_proj.dgrad", data_gradient_shape(q_up), {d_rope});
    weight_gradient(b, "attn.q_up_proj", q_up, {d_rope}, saved.column_output);
    const double q_bytes = t * static_cast<double>(s.q_rank) * e;
    d_latent.push_back(b.memory("attn.q_latent_norm.backward", 2.0 * q_bytes, q_bytes,
                                6.0 * t * static_cast<double>(s.q_rank), shape_text(ctx.tokens, s.q_rank),
                                joined({d_q_latent}, saved.column_output)));
  }
  // The latents' gradients are partial sums over each rank's heads: all-reduced over the TP group (every rank
  // holds the replicated down projection), the queries' own columns too without a query latent.
  const ColumnLinear down = down_proj(ctx);
  if (tp.communicates() && ctx.shard.tp > 1) {
    const int64_t replicated = s.q_rank > 0 ? s.down_cols() : s.cache_width();
    d_latent = {b.collective("attn.latent_proj.grad.all_reduce", CollectiveKind::kAllReduce,
                             t * static_cast<double>(replicated) * e, shape_text(ctx.tokens, replicated), d_latent)};
  }
  std::vector<OpId> d_normed;
  if (s.q_rank > 0) {
    // Every column replicated: the data gradient is whole on every rank (its rows sliced to the stream's), and
    // the weight gradient alike everywhere.
    const GemmShape forward = column_shape(ctx, down);
    d_normed = {b.gemm(down.gemm_name + ".dgrad", data_gradient_shape(forward), d_latent)};
    weight_gradient(b, down.gemm_name, forward, d_latent, saved.column_input);
  } else {
    // The rank's heads' query columns make the data gradient a partial sum: reduced as the mode reduces a
    // column-parallel linear's.
    d_normed = tp.column_input_gradient(b, ctx, down, d_latent, saved.column_input);
  }
  return module_input_gradient(b, ctx, down, d_normed, saved.input, "attn", grad);
}

}  // namespace tpsim::model
