// Op sequence of the linear-attention module, with FLOP and byte counts. The FLOPs of its memory-bound kernels
// (convolution, gated norm, their backwards) are informative: their time is their bytes.
#include "model/layers/linear_attention.hpp"

namespace tpsim::model {
namespace {

// One rank's shapes: its key and value heads and their widths.
struct LinearShape {
  double hk, hv, dk, dv;
  explicit LinearShape(const LayerContext& ctx)
      : hk(static_cast<double>(ctx.shard.linear_key_heads)),
        hv(static_cast<double>(ctx.shard.linear_value_heads)),
        dk(static_cast<double>(ctx.arch.linear.key_head_dim)),
        dv(static_cast<double>(ctx.arch.linear.value_head_dim)) {}
  double qkv() const { return 2.0 * hk * dk + hv * dv; }  // the convolution's channels
  double values() const { return hv * dv; }
};

int64_t in_proj_cols(const LayerContext& ctx) {
  const TpShard& s = ctx.shard;
  const LinearAttentionSpec& l = ctx.arch.linear;
  return 2 * s.linear_key_heads * l.key_head_dim + 2 * s.linear_value_heads * l.value_head_dim +
         2 * s.linear_value_heads;
}

ColumnLinear in_proj(const LayerContext& ctx) {
  return {"attn.norm", "linear_attn.in_proj", in_proj_cols(ctx)};
}
RowLinear out_proj(const LayerContext& ctx) {
  return {"attn", "linear_attn.out_proj", ctx.shard.linear_value_heads * ctx.arch.linear.value_head_dim};
}

bool decodes(const LayerContext& ctx) {
  return ctx.workload.is_inference() && ctx.pass.new_tokens == 1;
}

std::string scan_shape(const LayerContext& ctx) {
  return "b=" + std::to_string(ctx.pass.batch) + " new=" + std::to_string(ctx.pass.new_tokens) +
         " key_heads=" + std::to_string(ctx.shard.linear_key_heads) +
         " value_heads=" + std::to_string(ctx.shard.linear_value_heads) +
         " dk=" + std::to_string(ctx.arch.linear.key_head_dim) +
         " dv=" + std::to_string(ctx.arch.linear.value_head_dim);
}

// The gated delta rule over the pass. Both forms read q, k, v (the convolution's output), the gates' inputs a, b
// (the decay g and strength beta are computed inside, in fp32) and write the output.
OpId delta_rule(ProgramBuilder& b, const LayerContext& ctx, OpId conv, OpId projected,
                const std::string& name = "linear_attn.delta_rule") {
  const LinearShape s(ctx);
  const double e = b.elem_bytes();
  const double tokens = static_cast<double>(ctx.tokens);
  const double io_read = tokens * (s.qkv() + 2.0 * s.hv) * e, output = tokens * s.values() * e;
  const double batch = static_cast<double>(ctx.pass.batch);
  if (decodes(ctx)) {
    // One step per sequence: S <- g S + k (beta (v - S^T k))^T, o = S^T q: about 7 dk dv FLOPs per value head,
    // each sequence's state read and written once.
    const double state = batch * s.hv * s.dk * s.dv * ctx.arch.linear.state_bytes;
    return b.linear_attention(name, LinearScan{LinearKernel::kRecurrent, 1, 0}, 7.0 * tokens * s.hv * s.dk * s.dv,
                              io_read + state, output + state, output, scan_shape(ctx), {conv, projected});
  }
  // Chunked: the chunk-local products in parallel, the state carried from chunk to chunk along each chain.
  const int64_t chunks = (ctx.pass.new_tokens + kDeltaRuleChunk - 1) / kDeltaRuleChunk;
  const int64_t chains = ctx.pass.batch * ctx.shard.linear_value_heads *
                         ((ctx.arch.linear.value_head_dim + kDeltaRuleValueBlock - 1) / kDeltaRuleValueBlock);
  // HBM traffic beyond q, k, v and o (FLA's chunk_gated_delta_rule_fwd): the WY factors W, U and the new
  // values written and read again, and each chunk's state h (dk x dv, bf16) written by the state pass and read by
  // the output kernel.
  const double factors = 2.0 * tokens * s.hv * (s.dk + 2.0 * s.dv) * e;
  const double states = 2.0 * batch * static_cast<double>(chunks) * s.hv * s.dk * s.dv * e;
  const double flops =
      tokens * s.hv * chunked_delta_rule_flops_per_token(ctx.arch.linear.key_head_dim, ctx.arch.linear.value_head_dim);
  return b.linear_attention(name, LinearScan{LinearKernel::kChunked, chunks, chains}, flops,
                            io_read + factors / 2.0 + states / 2.0, output + factors / 2.0 + states / 2.0, output,
                            scan_shape(ctx), {conv, projected});
}

}  // namespace

double chunked_delta_rule_flops_per_token(int64_t key_dim, int64_t value_dim) {
  const double c = static_cast<double>(kDeltaRuleChunk), dk = static_cast<double>(key_dim),
               dv = static_cast<double>(value_dim);
  return 2.0 * c * (3.0 * dk + 2.0 * dv) + 6.0 * dk * dv + 2.0 * c * c / 3.0;
}

void set_linear_attention_parts(ProgramBuilder& b, const LayerContext& ctx) {
  const int64_t ba = 2 * ctx.shard.linear_value_heads;
  b.set_linear_parts(in_proj(ctx).gemm_name, {{"qkvz", in_proj_cols(ctx) - ba}, {"ba", ba}});
}

ModuleInput linear_attention_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp,
                                     const ModuleInput& input, SavedModule* saved) {
  const LinearShape s(ctx);
  const double e = b.elem_bytes();
  const double tokens = static_cast<double>(ctx.tokens);
  const double kernel = static_cast<double>(ctx.arch.linear.conv_kernel);
  const ColumnOutput projected = tp.column_forward(b, ctx, in_proj(ctx), input);
  // The causal depthwise convolution over q, k and v with its SiLU: 2 K FLOPs per channel and token for the
  // taps, about 4 for the SiLU. Decode reads and writes each sequence's last K - 1 inputs (vLLM's conv state).
  const double channels = s.qkv();
  const double conv_state = decodes(ctx) ? static_cast<double>(ctx.pass.batch) * (kernel - 1.0) * channels * e : 0.0;
  const OpId conv = b.memory("linear_attn.conv1d", tokens * channels * e + kernel * channels * e + conv_state,
                             tokens * channels * e + conv_state, (2.0 * kernel + 4.0) * tokens * channels,
                             shape_text(ctx.tokens, static_cast<int64_t>(channels)), projected.output);
  b.between_attention_parts();
  const OpId core = delta_rule(b, ctx, conv, projected.output.back());
  // RMSNorm of each head's output times SiLU(z): reads the output and z, writes the normed output.
  const double values = tokens * s.values();
  const OpId normed = b.memory("linear_attn.gated_norm", 2.0 * values * e + s.dv * e, values * e, 8.0 * values,
                               shape_text(ctx.tokens, static_cast<int64_t>(s.values())), {core});
  if (saved) *saved = SavedModule{input, projected.gemm_input, projected.output, {conv, core}, {normed}, {}};
  return tp.row_forward(b, ctx, out_proj(ctx), {normed}, input);
}

ModuleInput linear_attention_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp,
                                      const SavedModule& saved, const ModuleInput& grad) {
  const LinearShape s(ctx);
  const double e = b.elem_bytes();
  const double tokens = static_cast<double>(ctx.tokens);
  const double values = tokens * s.values();
  const OpId conv = saved.inner.at(0), core = saved.inner.at(1);
  std::vector<OpId> d_normed = tp.row_backward(b, ctx, out_proj(ctx), grad, saved.row_input);
  // The gated norm's backward: reads the incoming gradient, the rule's output and z; writes the gradients of both.
  d_normed.push_back(core);
  d_normed.insert(d_normed.end(), saved.column_output.begin(), saved.column_output.end());
  const OpId d_core = b.memory("linear_attn.gated_norm.backward", 3.0 * values * e, 2.0 * values * e, 12.0 * values,
                               shape_text(ctx.tokens, static_cast<int64_t>(s.values())), d_normed);
  // The rule's backward (FLA's chunk_gated_delta_rule_bwd): the forward's work again (the chunk states recomputed,
  // not saved) and the gradients' reverse pass, costed as the forward op's time x linear_attention.backward_ratio;
  // reads q, k, v, the gates and the output's gradient, writes the gradients of q, k, v and the gates.
  const OpId d_conv = delta_rule(b, ctx, d_core, conv, "linear_attn.delta_rule.backward");
  // The convolution's backward: reads its output's gradient and its input, writes its input's gradient (the taps'
  // gradient is a reduction over the same reads).
  const double channels = s.qkv(), kernel = static_cast<double>(ctx.arch.linear.conv_kernel);
  const OpId d_projected = b.memory("linear_attn.conv1d.backward", 2.0 * tokens * channels * e + kernel * channels * e,
                                    tokens * channels * e + kernel * channels * e, 4.0 * kernel * tokens * channels,
                                    shape_text(ctx.tokens, static_cast<int64_t>(channels)), {d_conv});
  const ColumnLinear linear = in_proj(ctx);
  return module_input_gradient(b, ctx, linear,
                               tp.column_input_gradient(b, ctx, linear, {d_projected, d_core}, saved.column_input),
                               saved.input, "attn", grad);
}

}  // namespace tpsim::model
