// FLOP and byte counts of the shared layer kernels.
#include "model/layers/layer_ops.hpp"

#include <algorithm>

#include "model/layers/attention_dims.hpp"
#include "model/layers/context_parallel_attention.hpp"
#include "model/layers/eager_kernels.hpp"

namespace tpsim::model {

std::vector<OpId> joined(std::vector<OpId> a, const std::vector<OpId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

OpId rms_norm(ProgramBuilder& b, const std::string& name, int64_t tokens, int64_t width,
              const std::vector<OpId>& deps) {
  const double bytes = static_cast<double>(tokens * width) * b.elem_bytes();
  return b.memory(name, bytes + static_cast<double>(width) * b.elem_bytes(), bytes,
                  4.0 * static_cast<double>(tokens * width), shape_text(tokens, width), deps);
}

OpId residual_add(ProgramBuilder& b, const std::string& name, int64_t tokens, int64_t width, std::vector<OpId> deps,
                  std::optional<OpId> residual) {
  if (residual) deps.push_back(*residual);
  const double bytes = static_cast<double>(tokens * width) * b.elem_bytes();
  return b.memory(name, 2.0 * bytes, bytes, static_cast<double>(tokens * width), shape_text(tokens, width), deps);
}

ModuleInput residual_stream(ProgramBuilder& b, const LayerContext& ctx, const std::string& name, std::vector<OpId> deps,
                            std::optional<OpId> residual) {
  return ModuleInput{residual_add(b, name, ctx.local_tokens, ctx.arch.hidden, std::move(deps), residual), true};
}

bool fuses_add_norm(const LayerContext& ctx, int module) {
  if (eager_norm(ctx, module)) return false;  // eager kernels fuse nothing
  switch (ctx.workload.implementation.add_norm) {
    case AddNormKernel::kFused:
      return true;
    case AddNormKernel::kFusedInLayer:
      return module >= 0 && module % 2 == 1;  // the norm of a layer's second module, after its first's add
    case AddNormKernel::kSeparate:
      break;
  }
  return false;
}

OpId stream_norm(ProgramBuilder& b, const LayerContext& ctx, const std::string& name, const ModuleInput& input) {
  const int64_t tokens = ctx.local_tokens, width = ctx.arch.hidden;
  if (eager_norm(ctx, b.module())) {
    return eager_kernels(b, name, eager_norm_forward(stream_bytes(ctx, b)), tokens, width, input.deps());
  }
  const bool fused =
      input.from_residual_add && input.ready && fuses_add_norm(ctx, b.module()) && b.can_continue(*input.ready);
  if (!fused) return rms_norm(b, name, tokens, width, input.deps());
  const double bytes = static_cast<double>(tokens * width) * b.elem_bytes();
  return b.continue_kernel(*input.ready, name, bytes, static_cast<double>(width) * b.elem_bytes(), bytes,
                           4.0 * static_cast<double>(tokens * width), shape_text(tokens, width), {});
}

namespace {

// The attention of a pass on one rank.
AttentionDims attention_dims(const LayerContext& ctx, const ProgramBuilder& b) {
  AttentionDims a;
  a.batch = static_cast<double>(ctx.pass.batch);
  a.q = static_cast<double>(ctx.pass.new_tokens);
  a.c = static_cast<double>(ctx.pass.cached_tokens);
  a.hq = static_cast<double>(ctx.shard.q_heads);
  a.hkv = static_cast<double>(ctx.shard.kv_heads);
  a.d = static_cast<double>(ctx.arch.head_dim);
  a.w = static_cast<double>(ctx.arch.window_at(b.model_layer()));
  return a;
}

std::string attention_shape(const LayerContext& ctx, const ProgramBuilder& b) {
  const int64_t window = ctx.arch.window_at(b.model_layer());
  return "b=" + std::to_string(ctx.pass.batch) + " new=" + std::to_string(ctx.pass.new_tokens) +
         " cached=" + std::to_string(ctx.pass.cached_tokens) + " heads=" + std::to_string(ctx.shard.q_heads) +
         " kv_heads=" + std::to_string(ctx.shard.kv_heads) + " d=" + std::to_string(ctx.arch.head_dim) +
         (window > 0 ? " window=" + std::to_string(window) : "");
}

}  // namespace

bool repeats_kv(const LayerContext& ctx) {
  return ctx.workload.implementation.repeat_kv && ctx.shard.q_heads > ctx.shard.kv_heads;
}

OpId repeat_kv(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& input) {
  const AttentionDims a = attention_dims(ctx, b);
  const double kv_tokens = a.batch * a.keys();
  const double heads_read = 2.0 * kv_tokens * a.hkv * a.d, heads_written = 2.0 * kv_tokens * a.hq * a.d;
  return b.memory("attn.repeat_kv", heads_read * b.elem_bytes(), heads_written * b.elem_bytes(), 0,
                  attention_shape(ctx, b), input);
}

OpId repeat_kv_backward(ProgramBuilder& b, const LayerContext& ctx, OpId grad) {
  const AttentionDims a = attention_dims(ctx, b);
  const double kv_tokens = a.batch * a.keys();
  const double expanded = 2.0 * kv_tokens * a.hq * a.d, grouped = 2.0 * kv_tokens * a.hkv * a.d;
  return b.memory("attn.repeat_kv.backward", expanded * b.elem_bytes(), grouped * b.elem_bytes(), expanded,
                  attention_shape(ctx, b), {grad});
}

OpId attention_core(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& input) {
  if (ctx.workload.context_parallel.enabled()) return context_parallel_attention(b, ctx, input);
  const double e = b.elem_bytes();
  const double qkv = b.attention_fp8() ? kFp8Bytes : e;  // Q, K, V and the KV cache; the output stays e
  AttentionDims a = attention_dims(ctx, b);
  if (repeats_kv(ctx)) a.hkv = a.hq;  // it reads K and V copied out to every query head
  const double output = a.output_bytes(e);
  const double cache_append = ctx.workload.is_inference() ? 2.0 * a.batch * a.q * a.hkv * a.d * qkv : 0.0;
  return b.attention("attn.core", a.forward_flops(), a.causal_inverse_length(),
                     a.query_bytes(qkv) + a.key_value_bytes(qkv), output + cache_append, output,
                     attention_shape(ctx, b) + (b.attention_fp8() ? " fp8" : ""), input);
}

OpId attention_core_backward(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& deps) {
  if (ctx.workload.context_parallel.enabled()) return context_parallel_attention_backward(b, ctx, deps);
  const double e = b.elem_bytes();
  AttentionDims a = attention_dims(ctx, b);
  if (repeats_kv(ctx)) a.hkv = a.hq;
  return b.attention("attn.core.backward", kAttentionBackwardFlopRatio * a.forward_flops(), a.causal_inverse_length(),
                     a.backward_read_bytes(e), a.backward_written_bytes(e), a.backward_written_bytes(e),
                     attention_shape(ctx, b), deps);
}

}  // namespace tpsim::model
