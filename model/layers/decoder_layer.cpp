// Op sequences of the attention and FFN modules, forward and backward, with FLOP and byte counts.
#include "model/layers/decoder_layer.hpp"

#include "base/input_error.hpp"
#include "model/layers/eager_kernels.hpp"

#include "model/layers/latent_attention.hpp"
#include "model/layers/linear_attention.hpp"
#include "model/moe/moe_layer.hpp"

namespace tpsim::model {
namespace {

// Query columns of q_proj: each head's query, and its output gate where the model gates attention.
int64_t query_cols(const LayerContext& ctx) {
  return (ctx.arch.attention_output_gate ? 2 : 1) * ctx.shard.q_heads * ctx.arch.head_dim;
}
ColumnLinear qkv_linear(const LayerContext& ctx) {
  return {"attn.norm", "attn.qkv_proj", query_cols(ctx) + 2 * ctx.shard.kv_heads * ctx.arch.head_dim};
}
RowLinear o_linear(const LayerContext& ctx) {
  return {"attn", "attn.o_proj", ctx.shard.q_heads * ctx.arch.head_dim};
}
// gate and up (a gated FFN) or up alone (a plain GeLU FFN: GPT-2's c_fc, GPT-NeoX's dense_h_to_4h).
ColumnLinear gate_up_linear(const LayerContext& ctx) {
  const bool gated = ctx.arch.style.mlp == MlpKind::kGated;
  return {"ffn.norm", gated ? "ffn.gate_up_proj" : "ffn.up_proj", ctx.arch.up_projections() * ctx.shard.ffn};
}
RowLinear down_linear(const LayerContext& ctx) {
  return {"ffn", "ffn.down_proj", ctx.shard.ffn};
}

// The q and k columns RoPE (and QK-norm) rotate.
int64_t rotated_cols(const LayerContext& ctx) {
  return (ctx.shard.q_heads + ctx.shard.kv_heads) * ctx.arch.head_dim;
}

// RoPE over the rotated columns: one fused kernel, or PyTorch's complex-number code left unfused (a cast
// to fp32, the complex product in fp32, the cast back).
// A partial rotary embedding (rotary_fraction < 1) reads and writes only the turned part of each head.
OpId rotary(ProgramBuilder& b, const LayerContext& ctx, const std::string& name, const std::vector<OpId>& deps) {
  const auto elements = static_cast<double>(ctx.tokens * rotated_cols(ctx)) * ctx.arch.rotary_fraction;
  const double e = b.elem_bytes();
  const std::string shape = shape_text(ctx.tokens, rotated_cols(ctx));
  if (ctx.workload.implementation.rope == RopeKernel::kFused) {
    return b.memory(name, elements * e, elements * e, 6.0 * elements, shape, deps);
  }
  const OpId up = b.memory(name + ".to_fp32", elements * e, elements * kFp32Bytes, elements, shape, deps);
  const OpId turned =
      b.memory(name + ".rotate", elements * kFp32Bytes, elements * kFp32Bytes, 6.0 * elements, shape, {up});
  return b.memory(name + ".to_bf16", elements * kFp32Bytes, elements * e, elements, shape, {turned});
}

// Whether SwiGLU runs as eager PyTorch's separate kernels (implementation.swiglu: eager).
bool eager_swiglu(const LayerContext& ctx) {
  return ctx.workload.implementation.swiglu == SwigluKernel::kEager;
}

// Whether the layer turns q and k (RoPE, whole or partial); GPT-2's learned positions turn nothing.
bool has_rotary(const LayerContext& ctx) {
  return ctx.arch.rotary_fraction > 0.0;
}

// The FFN's activation over the up projection's output: SwiGLU / GeGLU (reads gate and up, writes their product)
// or a plain GeLU (reads and writes one [tokens, ffn]; 8 FLOPs an element for tanh's polynomial, assumed).
OpId ffn_activation(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& deps) {
  const int64_t ffn = ctx.shard.ffn, t = ctx.tokens;
  const double e = b.elem_bytes(), out = static_cast<double>(t * ffn) * e;
  if (ctx.arch.style.mlp == MlpKind::kPlain) {
    return b.memory("ffn.gelu", out, out, 8.0 * static_cast<double>(t * ffn), shape_text(t, ffn), deps);
  }
  if (eager_swiglu(ctx)) return eager_kernels(b, "ffn.swiglu", eager_swiglu_forward(e), t, ffn, deps);
  return b.memory("ffn.swiglu", static_cast<double>(t * 2 * ffn) * e, out, 4.0 * static_cast<double>(t * ffn),
                  shape_text(t, ffn), deps);
}

// Its backward: SwiGLU's reads gate, up and the incoming gradient and writes the gradients of gate and up; GeLU's
// reads its input and the incoming gradient and writes one gradient.
OpId ffn_activation_backward(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& deps) {
  const int64_t ffn = ctx.shard.ffn, t = ctx.tokens;
  const double e = b.elem_bytes();
  if (ctx.arch.style.mlp == MlpKind::kPlain) {
    return b.memory("ffn.gelu.backward", static_cast<double>(t * 2 * ffn) * e, static_cast<double>(t * ffn) * e,
                    10.0 * static_cast<double>(t * ffn), shape_text(t, ffn), deps);
  }
  if (eager_swiglu(ctx)) return eager_kernels(b, "ffn.swiglu.backward", eager_swiglu_backward(e), t, ffn, deps);
  return b.memory("ffn.swiglu.backward", static_cast<double>(t * 3 * ffn) * e, static_cast<double>(t * 2 * ffn) * e,
                  8.0 * static_cast<double>(t * ffn), shape_text(t, 2 * ffn), deps);
}

// Gemma 2/3's norm of a module's output (post_attention_layernorm, post_feedforward_layernorm in
// modeling_gemma2.py), an RMSNorm over the stream's rows; issued after the module's residual add, where Gemma runs
// it before the add: both memory-bound kernels over the same rows, so the order moves no cost.
ModuleInput post_norm(ProgramBuilder& b, const LayerContext& ctx, const std::string& module, const ModuleInput& out) {
  if (ctx.arch.style.norms_per_layer != 4) return out;
  return ModuleInput{rms_norm(b, module + ".post_norm", ctx.local_tokens, ctx.arch.hidden, out.deps())};
}

// Its backward: reads the incoming gradient, the norm's input and weight, writes the gradient of the module's output.
ModuleInput post_norm_backward(ProgramBuilder& b, const LayerContext& ctx, const std::string& module,
                               const ModuleInput& grad) {
  if (ctx.arch.style.norms_per_layer != 4) return grad;
  const int64_t rows = ctx.local_tokens, width = ctx.arch.hidden;
  const double bytes = static_cast<double>(rows * width) * b.elem_bytes();
  return ModuleInput{b.memory(module + ".post_norm.backward", 2.0 * bytes + static_cast<double>(width) * b.elem_bytes(),
                              bytes, 6.0 * static_cast<double>(rows * width), shape_text(rows, width), grad.deps())};
}

// A linear bias's gradient, the column sum of its output's gradient over the rank's `rows`: one memory-bound
// reduction reading [rows, cols] and writing the cols (grad_output.sum(0) in PyTorch autograd's linear and in
// Megatron's local linears), none where Transformer Engine's linears take it in the weight-gradient GEMM's
// epilogue (cuBLASLt's BGRADB). The forward's bias add is an epilogue (cuBLASLt's bias epilogue, Megatron's
// bias-GeLU and bias-dropout-add fusions) reading cols elements: not issued.
void bias_gradient(ProgramBuilder& b, const LayerContext& ctx, const std::string& gemm_name, int64_t rows, int64_t cols,
                   const std::vector<OpId>& grad) {
  if (ctx.workload.implementation.saved_gemm_inputs == SavedGemmInputs::kTransformerEngine) return;
  const double e = b.elem_bytes(), elements = static_cast<double>(rows * cols);
  b.memory(gemm_name + ".bias_grad", elements * e, static_cast<double>(cols) * e, elements, shape_text(rows, cols),
           grad);
}

// The gated attention output: attention x sigmoid(gate), reading both and writing the product.
OpId output_gate(ProgramBuilder& b, const LayerContext& ctx, OpId core, const std::vector<OpId>& projected) {
  const int64_t cols = ctx.shard.q_heads * ctx.arch.head_dim;
  const double bytes = static_cast<double>(ctx.tokens * cols) * b.elem_bytes();
  return b.memory("attn.output_gate", 2.0 * bytes, bytes, 5.0 * static_cast<double>(ctx.tokens * cols),
                  shape_text(ctx.tokens, cols), joined({core}, projected));
}

}  // namespace

void set_projection_parts(ProgramBuilder& b, const LayerContext& ctx) {
  const Implementation& i = ctx.workload.implementation;
  const int64_t d = ctx.arch.head_dim;
  if (i.separate_qkv) {
    b.set_linear_parts(qkv_linear(ctx).gemm_name,
                       {{"q", query_cols(ctx)}, {"k", ctx.shard.kv_heads * d}, {"v", ctx.shard.kv_heads * d}});
  }
  if (ctx.arch.linear.enabled()) set_linear_attention_parts(b, ctx);
  if (i.separate_gate_up && ctx.arch.style.mlp == MlpKind::kGated) {
    b.set_linear_parts(gate_up_linear(ctx).gemm_name, {{"gate", ctx.shard.ffn}, {"up", ctx.shard.ffn}});
  }
}

ModuleInput attention_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const ModuleInput& input,
                              SavedModule* saved) {
  if (ctx.arch.linear.is_linear(b.model_layer())) return linear_attention_forward(b, ctx, tp, input, saved);
  if (ctx.arch.latent.enabled()) return latent_attention_forward(b, ctx, tp, input, saved);
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
  std::vector<OpId> rope = rotated_input;
  if (has_rotary(ctx)) rope = {rotary(b, ctx, "attn.rope", rotated_input)};
  if (repeats_kv(ctx)) rope = {repeat_kv(b, ctx, rope)};
  b.between_attention_parts();
  const OpId core = attention_core(b, ctx, rope);
  const OpId out = ctx.arch.attention_output_gate ? output_gate(b, ctx, core, qkv.output) : core;
  if (saved) *saved = SavedModule{input, qkv.gemm_input, qkv.output, joined(rope, {core}), {out}, {}};
  // A parallel layer's o_proj leaves its partial sums on each rank: the FFN's down projection accumulates
  // into them and one reduction closes the layer (layer_forward).
  if (ctx.arch.style.parallel_residual)
    return ModuleInput{b.gemm(o_linear(ctx).gemm_name, row_shape(ctx, o_linear(ctx)), {out})};
  return post_norm(b, ctx, "attn", tp.row_forward(b, ctx, o_linear(ctx), {out}, input));
}

ModuleInput ffn_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const ModuleInput& input,
                        SavedModule* saved, const std::vector<OpId>& accumulated) {
  if (ctx.arch.moe.is_moe(b.model_layer())) return moe_forward(b, ctx, tp, input, saved);
  const ColumnOutput gate_up = tp.column_forward(b, ctx, gate_up_linear(ctx), input);
  const OpId act = ffn_activation(b, ctx, gate_up.output);
  if (saved) *saved = SavedModule{input, gate_up.gemm_input, gate_up.output, {}, {act}, {}};
  return post_norm(b, ctx, "ffn", tp.row_forward(b, ctx, down_linear(ctx), joined({act}, accumulated), input));
}

void check_parallel_residual(const LayerContext& ctx) {
  if (!ctx.arch.style.parallel_residual) return;
  const std::string where =
      "variant " + ctx.variant.name + ": model " + ctx.arch.name + " runs attention and MLP in parallel";
  const std::string valid =
      "; valid with a parallel layer: a dense FFN, tp_mode tp, sp, async or nocomm (dtp with delta 0), "
      "without two_batch_overlap or overlap_moe_expert_parallel_comm";
  if (ctx.arch.moe.enabled() || ctx.arch.linear.enabled() || ctx.arch.latent.enabled()) {
    throw InputError(where + " beside MoE, linear or latent attention layers, which is not modelled" + valid);
  }
  if (ctx.variant.mode == TpMode::kDtp && ctx.variant.delta > 0) {
    throw InputError(where + ": tp_mode dtp with delta > 0 (one reduction per layer, not per module) is not modelled" +
                     valid);
  }
  if (ctx.variant.two_batch_overlap || ctx.variant.overlap_moe_expert_parallel_comm) {
    throw InputError(where + ": two_batch_overlap and overlap_moe_expert_parallel_comm are not modelled for it" +
                     valid);
  }
}

ModuleInput layer_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, int64_t layer,
                          const ModuleInput& hidden, SavedModule* attn, SavedModule* ffn, bool enter) {
  b.set_module(static_cast<int>(2 * layer));
  const ModuleInput input = enter ? tp.enter_module(b, ctx, hidden) : hidden;
  const ModuleInput attended = attention_forward(b, ctx, tp, input, attn);
  b.set_module(static_cast<int>(2 * layer + 1));
  // A parallel layer (x + attn(norm(x)) + mlp(norm(x))): the FFN reads the layer's input, and its down
  // projection accumulates into the attention's unreduced o_proj output (a GEMM reading C, beta 1, as GPT-NeoX
  // and Megatron sum the two row-parallel outputs before their one reduction).
  if (ctx.arch.style.parallel_residual) return ffn_forward(b, ctx, tp, input, ffn, attended.deps());
  return ffn_forward(b, ctx, tp, enter ? tp.enter_module(b, ctx, attended) : attended, ffn);
}

ModuleInput layer_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, int64_t layer,
                           const SavedModule& attn, const SavedModule& ffn, const ModuleInput& grad) {
  b.set_module(static_cast<int>(2 * layer + 1));
  const ModuleInput through_ffn = ffn_backward(b, ctx, tp, ffn, grad);
  tp.after_module_backward(b, ctx, through_ffn);
  b.set_module(static_cast<int>(2 * layer));
  // A parallel layer's attention reads the layer output's gradient too; its input gradient adds to the FFN's.
  const ModuleInput through_attn = ctx.arch.style.parallel_residual
                                       ? attention_backward(b, ctx, tp, attn, grad, &through_ffn)
                                       : attention_backward(b, ctx, tp, attn, through_ffn);
  tp.after_module_backward(b, ctx, through_attn);
  return through_attn;
}

ModuleInput attention_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const SavedModule& saved,
                               const ModuleInput& grad, const ModuleInput* skip) {
  if (ctx.arch.linear.is_linear(b.model_layer())) return linear_attention_backward(b, ctx, tp, saved, grad);
  if (ctx.arch.latent.enabled()) return latent_attention_backward(b, ctx, tp, saved, grad);
  const int64_t d = ctx.arch.head_dim;
  const int64_t t = ctx.tokens;
  const double e = b.elem_bytes();
  const ModuleInput d_out = post_norm_backward(b, ctx, "attn", grad);
  std::vector<OpId> d_core = tp.row_backward(b, ctx, o_linear(ctx), d_out, saved.row_input);
  if (ctx.arch.style.linear_bias) bias_gradient(b, ctx, "attn.o_proj", ctx.local_tokens, ctx.arch.hidden, d_out.deps());
  if (ctx.arch.attention_output_gate) {
    // The gradients of the attention output and of the gate: reads the incoming gradient, the output and the
    // gate, writes both gradients.
    const int64_t cols = ctx.shard.q_heads * ctx.arch.head_dim;
    const double bytes = static_cast<double>(t * cols) * e;
    d_core = {b.memory("attn.output_gate.backward", 3.0 * bytes, 2.0 * bytes, 6.0 * static_cast<double>(t * cols),
                       shape_text(t, cols), joined(d_core, saved.inner))};
  }
  const OpId d_qkv = attention_core_backward(b, ctx, joined(joined(d_core, saved.inner), saved.column_output));
  const int64_t rotated = rotated_cols(ctx);
  const double rotated_bytes = static_cast<double>(t * rotated) * e;
  // RoPE's backward rotates the gradient back: the forward's traffic; QK-norm's reads its input too.
  const OpId d_rotated = repeats_kv(ctx) ? repeat_kv_backward(b, ctx, d_qkv) : d_qkv;
  OpId d_proj = has_rotary(ctx) ? rotary(b, ctx, "attn.rope.backward", {d_rotated}) : d_rotated;
  if (ctx.arch.qk_norm) {
    d_proj =
        b.memory("attn.qk_norm.backward", 2.0 * rotated_bytes + 2.0 * d * e, rotated_bytes,
                 6.0 * static_cast<double>(t * rotated), shape_text(t, rotated), joined({d_proj}, saved.column_output));
  }
  const ColumnLinear qkv = qkv_linear(ctx);
  if (ctx.arch.qkv_bias || ctx.arch.style.linear_bias) bias_gradient(b, ctx, qkv.gemm_name, t, qkv.out_cols, {d_proj});
  return module_input_gradient(b, ctx, qkv, tp.column_input_gradient(b, ctx, qkv, {d_proj}, saved.column_input),
                               saved.input, "attn", skip ? *skip : grad);
}

ModuleInput ffn_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const SavedModule& saved,
                         const ModuleInput& grad) {
  if (ctx.arch.moe.is_moe(b.model_layer())) return moe_backward(b, ctx, tp, saved, grad);
  const ModuleInput d_out = post_norm_backward(b, ctx, "ffn", grad);
  const std::vector<OpId> d_act = tp.row_backward(b, ctx, down_linear(ctx), d_out, saved.row_input);
  if (ctx.arch.style.linear_bias)
    bias_gradient(b, ctx, "ffn.down_proj", ctx.local_tokens, ctx.arch.hidden, d_out.deps());
  const OpId d_gate_up = ffn_activation_backward(b, ctx, joined(d_act, saved.column_output));
  const ColumnLinear gate_up = gate_up_linear(ctx);
  if (ctx.arch.style.linear_bias) bias_gradient(b, ctx, gate_up.gemm_name, ctx.tokens, gate_up.out_cols, {d_gate_up});
  return module_input_gradient(b, ctx, gate_up,
                               tp.column_input_gradient(b, ctx, gate_up, {d_gate_up}, saved.column_input), saved.input,
                               "ffn", grad);
}

}  // namespace tpsim::model
