// FLOP and byte counts of the shared layer kernels.
#include "model/layer_ops.hpp"

namespace tpsim::model {

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

OpId attention_core(ProgramBuilder& b, const LayerContext& ctx, OpId input) {
  const double e = b.elem_bytes();
  const double qkv = b.attention_fp8() ? kFp8Bytes : e;  // Q, K, V and the KV cache; the output stays e
  const double batch = static_cast<double>(ctx.pass.batch);
  const double q = static_cast<double>(ctx.pass.new_tokens);
  const double c = static_cast<double>(ctx.pass.cached_tokens);
  const double hq = static_cast<double>(ctx.shard.q_heads);
  const double hkv = static_cast<double>(ctx.shard.kv_heads);
  const double d = static_cast<double>(ctx.arch.head_dim);
  const double flops = 4.0 * batch * hq * d * (q * c + q * q / 2.0);
  const double queries = batch * q * hq * d * qkv;
  const double output = batch * q * hq * d * e;
  const double keys_values = 2.0 * batch * (c + q) * hkv * d * qkv;
  const double cache_append = ctx.workload.is_inference() ? 2.0 * batch * q * hkv * d * qkv : 0.0;
  const std::string shape =
      "b=" + std::to_string(ctx.pass.batch) + " new=" + std::to_string(ctx.pass.new_tokens) +
      " cached=" + std::to_string(ctx.pass.cached_tokens) + " heads=" + std::to_string(ctx.shard.q_heads) +
      " kv_heads=" + std::to_string(ctx.shard.kv_heads) + " d=" + std::to_string(ctx.arch.head_dim);
  return b.attention("attn.core", flops, queries + keys_values, output + cache_append, output,
                     shape + (b.attention_fp8() ? " fp8" : ""), {input});
}

OpId attention_core_backward(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& deps) {
  const double e = b.elem_bytes();
  const double batch = static_cast<double>(ctx.pass.batch);
  const double q = static_cast<double>(ctx.pass.new_tokens);
  const double c = static_cast<double>(ctx.pass.cached_tokens);
  const double hq = static_cast<double>(ctx.shard.q_heads);
  const double hkv = static_cast<double>(ctx.shard.kv_heads);
  const double d = static_cast<double>(ctx.arch.head_dim);
  const double flops = 2.5 * 4.0 * batch * hq * d * (q * c + q * q / 2.0);
  const double query_side = batch * q * hq * d * e;             // one of Q, O, dO, dQ
  const double key_side = 2.0 * batch * (c + q) * hkv * d * e;  // K and V, or their gradients
  const std::string shape = "b=" + std::to_string(ctx.pass.batch) + " seq=" + std::to_string(ctx.pass.new_tokens) +
                            " heads=" + std::to_string(ctx.shard.q_heads) +
                            " kv_heads=" + std::to_string(ctx.shard.kv_heads) +
                            " d=" + std::to_string(ctx.arch.head_dim);
  return b.attention("attn.core.backward", flops, 3.0 * query_side + key_side, query_side + key_side,
                     query_side + key_side, shape, deps);
}

}  // namespace tpsim::model
