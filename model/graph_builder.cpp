// Per-layer op sequences: attention module (norm, QKV, QK-norm, RoPE, attention, O-proj, residual) and
// FFN module (norm, gate/up, SwiGLU, down, residual), with the variant's communication around them.
#include "model/graph_builder.hpp"

#include <optional>

#include "model/async_tp.hpp"
#include "model/input_error.hpp"
#include "model/program_builder.hpp"

namespace tpsim::model {
namespace {

// RMSNorm over [tokens, width]: reads the input and the weight, writes the output.
OpId rms_norm(ProgramBuilder& b, const std::string& name, int64_t tokens, int64_t width,
              const std::vector<OpId>& deps) {
  const double bytes = static_cast<double>(tokens * width) * b.elem_bytes();
  return b.memory(name, bytes + width * b.elem_bytes(), bytes, 4.0 * static_cast<double>(tokens * width),
                  shape_text(tokens, width), deps);
}

// Column-parallel GEMM with its input norm; returns the ops producing the GEMM output.
std::vector<OpId> norm_and_column_gemm(ProgramBuilder& b, const LayerContext& ctx, const std::string& norm_name,
                                       const std::string& gemm_name, int64_t out_cols, std::optional<OpId> input) {
  const int64_t hidden = ctx.arch.hidden;
  const GemmShape full{ctx.tokens, out_cols, hidden};
  const std::vector<OpId> input_deps = input ? std::vector<OpId>{*input} : std::vector<OpId>{};
  const TpMode mode = ctx.variant.mode;
  const bool fused = mode == TpMode::kAsync && !(ctx.variant.chunks == 1 && ctx.variant.transport == Transport::kSm);
  if (fused && ctx.variant.boundary_overlap) {
    return async_gather_gemm(b, ctx, gemm_name, full, input, PieceNorm{norm_name});
  }
  const OpId normed = rms_norm(b, norm_name, ctx.local_tokens, hidden, input_deps);
  if (fused) return async_gather_gemm(b, ctx, gemm_name, full, normed, std::nullopt);
  std::vector<OpId> gemm_deps{normed};
  if (mode == TpMode::kSp || mode == TpMode::kAsync) {
    const double bytes = static_cast<double>(ctx.tokens * hidden) * b.elem_bytes();
    gemm_deps = {b.collective(gemm_name + ".all_gather", CollectiveKind::kAllGather, bytes,
                              shape_text(ctx.tokens, hidden), {normed})};
  }
  return {b.gemm(gemm_name, full, gemm_deps)};
}

// Row-parallel GEMM followed by its reduction; returns the ops producing the reduced output.
std::vector<OpId> row_gemm_and_reduce(ProgramBuilder& b, const LayerContext& ctx, const std::string& name,
                                      int64_t in_cols, const std::vector<OpId>& inputs) {
  const int64_t hidden = ctx.arch.hidden;
  const GemmShape full{ctx.tokens, hidden, in_cols};
  const TpMode mode = ctx.variant.mode;
  if (mode == TpMode::kAsync && !(ctx.variant.chunks == 1 && ctx.variant.transport == Transport::kSm)) {
    return async_gemm_scatter(b, ctx, name, full, inputs);
  }
  const OpId product = b.gemm(name, full, inputs);
  const double bytes = static_cast<double>(ctx.tokens * hidden) * b.elem_bytes();
  const std::string shape = shape_text(ctx.tokens, hidden);
  switch (mode) {
    case TpMode::kTp:
      return {b.collective(name + ".all_reduce", CollectiveKind::kAllReduce, bytes, shape, {product})};
    case TpMode::kSp:
    case TpMode::kAsync:
      return {b.collective(name + ".reduce_scatter", CollectiveKind::kReduceScatter, bytes, shape, {product})};
    case TpMode::kNoComm:
      return {product};
  }
  return {product};
}

OpId residual_add(ProgramBuilder& b, const LayerContext& ctx, const std::string& name, std::vector<OpId> deps,
                  std::optional<OpId> residual) {
  if (residual) deps.push_back(*residual);
  const double bytes = static_cast<double>(ctx.local_tokens * ctx.arch.hidden) * b.elem_bytes();
  return b.memory(name, 2.0 * bytes, bytes, static_cast<double>(ctx.local_tokens * ctx.arch.hidden),
                  shape_text(ctx.local_tokens, ctx.arch.hidden), deps);
}

OpId attention_module(ProgramBuilder& b, const LayerContext& ctx, std::optional<OpId> input) {
  const int64_t d = ctx.arch.head_dim;
  const int64_t hq = ctx.shard.q_heads;
  const int64_t hkv = ctx.shard.kv_heads;
  const int64_t t = ctx.tokens;
  const double e = b.elem_bytes();
  std::vector<OpId> qkv = norm_and_column_gemm(b, ctx, "attn.norm", "attn.qkv_proj", (hq + 2 * hkv) * d, input);
  const int64_t rotated = (hq + hkv) * d;  // q and k columns
  const double rotated_bytes = static_cast<double>(t * rotated) * e;
  if (ctx.arch.qk_norm) {
    qkv = {b.memory("attn.qk_norm", rotated_bytes + 2.0 * d * e, rotated_bytes, 4.0 * static_cast<double>(t * rotated),
                    shape_text(t, rotated), qkv)};
  }
  const OpId rope = b.memory("attn.rope", rotated_bytes, rotated_bytes, 6.0 * static_cast<double>(t * rotated),
                             shape_text(t, rotated), qkv);
  // FlashAttention forward, causal: QK^T and PV are 2*b*s^2*h*d FLOPs each, half of them masked.
  const double seq = static_cast<double>(ctx.workload.seq_len);
  const double flops = 2.0 * static_cast<double>(ctx.workload.batch) * seq * seq * static_cast<double>(hq * d);
  const double io_bytes = static_cast<double>(t * (2 * hq + 2 * hkv) * d) * e;
  const OpId core = b.attention(
      "attn.core", flops, io_bytes - static_cast<double>(t * hq * d) * e, static_cast<double>(t * hq * d) * e,
      "b=" + std::to_string(ctx.workload.batch) + " s=" + std::to_string(ctx.workload.seq_len) +
          " heads=" + std::to_string(hq) + " kv_heads=" + std::to_string(hkv) + " d=" + std::to_string(d),
      {rope});
  const std::vector<OpId> reduced = row_gemm_and_reduce(b, ctx, "attn.o_proj", hq * d, {core});
  return residual_add(b, ctx, "attn.residual", reduced, input);
}

OpId ffn_module(ProgramBuilder& b, const LayerContext& ctx, OpId input) {
  const int64_t ffn = ctx.shard.ffn;
  const int64_t t = ctx.tokens;
  const double e = b.elem_bytes();
  const std::vector<OpId> gate_up = norm_and_column_gemm(b, ctx, "ffn.norm", "ffn.gate_up_proj", 2 * ffn, input);
  const OpId act = b.memory("ffn.swiglu", static_cast<double>(t * 2 * ffn) * e, static_cast<double>(t * ffn) * e,
                            4.0 * static_cast<double>(t * ffn), shape_text(t, ffn), gate_up);
  const std::vector<OpId> reduced = row_gemm_and_reduce(b, ctx, "ffn.down_proj", ffn, {act});
  return residual_add(b, ctx, "ffn.residual", reduced, input);
}

void check_variant(const LayerContext& ctx, int tp) {
  const Variant& v = ctx.variant;
  if (ctx.sequence_sharded() && ctx.tokens % tp != 0) {
    throw InputError("variant " + v.name + ": tokens (batch x seq_len = " + std::to_string(ctx.tokens) +
                     ") must be divisible by tp=" + std::to_string(tp) + " to shard the sequence");
  }
  if (v.mode == TpMode::kAsync) plan_chunks(ctx.tokens, tp, v.chunks);
}

}  // namespace

LayerGraph build_layer_graph(const ArchSpec& arch, const Workload& workload, int tp, const Variant& variant) {
  LayerContext ctx;
  ctx.arch = arch;
  ctx.shard = shard_for_tp(arch, tp);
  ctx.workload = workload;
  ctx.variant = variant;
  ctx.tokens = workload.tokens();
  ctx.local_tokens = ctx.sequence_sharded() ? ctx.tokens / tp : ctx.tokens;
  ctx.elem_bytes = dtype_bytes(workload.dtype);
  check_variant(ctx, tp);

  LayerGraph graph(tp);
  ProgramBuilder builder(graph, ctx.elem_bytes);
  std::optional<OpId> hidden;
  for (int64_t layer = 0; layer < workload.layers; ++layer) {
    builder.set_layer(static_cast<int>(layer));
    const OpId after_attention = attention_module(builder, ctx, hidden);
    hidden = ffn_module(builder, ctx, after_attention);
  }
  return graph;
}

}  // namespace tpsim::model
