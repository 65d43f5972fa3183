// Per-layer op sequences: attention module (norm, QKV, QK-norm, RoPE, attention, O-proj, residual) and
// FFN module (norm, gate/up, SwiGLU, down, residual), with the variant's communication around them.
#include "model/graph_builder.hpp"

#include <optional>

#include "model/async_tp.hpp"
#include "model/dtp.hpp"
#include "model/input_error.hpp"
#include "model/layer_ops.hpp"
#include "model/program_builder.hpp"

namespace tpsim::model {
namespace {

// Column-parallel GEMM with its input norm; returns the ops producing the GEMM output.
std::vector<OpId> norm_and_column_gemm(ProgramBuilder& b, const LayerContext& ctx, const std::string& norm_name,
                                       const std::string& gemm_name, int64_t out_cols, const ModuleInput& input) {
  const int64_t hidden = ctx.arch.hidden;
  const GemmShape full{ctx.tokens, out_cols, hidden};
  if (fused_async(ctx.variant) && ctx.variant.boundary_overlap) {
    return async_gather_gemm(b, ctx, gemm_name, full, input.ready, PieceNorm{norm_name});
  }
  const OpId normed = rms_norm(b, norm_name, ctx.local_tokens, hidden, input.deps());
  if (ctx.variant.mode == TpMode::kSp || ctx.variant.mode == TpMode::kAsync) {
    return gather_then_gemm(b, ctx, gemm_name, full, normed);
  }
  return {b.gemm(gemm_name, full, {normed})};
}

// Row-parallel GEMM, its reduction and the residual add; returns the new residual stream.
ModuleInput row_gemm_reduce_residual(ProgramBuilder& b, const LayerContext& ctx, DtpState& dtp,
                                     const std::string& module, int64_t in_cols, const std::vector<OpId>& inputs,
                                     const ModuleInput& residual) {
  const int64_t hidden = ctx.arch.hidden;
  const GemmShape full{ctx.tokens, hidden, in_cols};
  const std::string name = module + (module == "attn" ? ".o_proj" : ".down_proj");
  std::vector<OpId> reduced;
  if (ctx.variant.mode == TpMode::kSp || ctx.variant.mode == TpMode::kAsync) {
    reduced = gemm_then_scatter(b, ctx, name, full, inputs);
  } else {
    const OpId product = b.gemm(name, full, inputs);
    // tp and dtp (delta 0 is blocking TP): the all-reduce, now or delta modules later.
    if (ctx.variant.mode != TpMode::kNoComm) return dtp.reduce_into_residual(b, ctx, module, name, product, residual);
    reduced = {product};
  }
  return ModuleInput{residual_add(b, module + ".residual", ctx.local_tokens, hidden, reduced, residual.ready)};
}

ModuleInput attention_module(ProgramBuilder& b, const LayerContext& ctx, DtpState& dtp, const ModuleInput& input) {
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
  const OpId core = attention_core(b, ctx, rope);
  return row_gemm_reduce_residual(b, ctx, dtp, "attn", hq * d, {core}, input);
}

ModuleInput ffn_module(ProgramBuilder& b, const LayerContext& ctx, DtpState& dtp, const ModuleInput& input) {
  const int64_t ffn = ctx.shard.ffn;
  const int64_t t = ctx.tokens;
  const double e = b.elem_bytes();
  const std::vector<OpId> gate_up = norm_and_column_gemm(b, ctx, "ffn.norm", "ffn.gate_up_proj", 2 * ffn, input);
  const OpId act = b.memory("ffn.swiglu", static_cast<double>(t * 2 * ffn) * e, static_cast<double>(t * ffn) * e,
                            4.0 * static_cast<double>(t * ffn), shape_text(t, ffn), gate_up);
  return row_gemm_reduce_residual(b, ctx, dtp, "ffn", ffn, {act}, input);
}

void check_variant(const LayerContext& ctx, int tp) {
  const Variant& v = ctx.variant;
  const bool needs_shards = v.mode == TpMode::kSp || v.mode == TpMode::kAsync;
  if (needs_shards && ctx.tokens % tp != 0) {
    throw InputError("variant " + v.name + ": tokens of a pass (batch x new tokens = " + std::to_string(ctx.tokens) +
                     ") must be divisible by tp=" + std::to_string(tp) +
                     " to shard the sequence; use tp_mode tp or dtp");
  }
  if (v.mode == TpMode::kAsync) plan_chunks(ctx.tokens, tp, v.chunks);
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
  ctx.sequence_sharded = variant.mode == TpMode::kSp || variant.mode == TpMode::kAsync ||
                         (variant.mode == TpMode::kNoComm && ctx.tokens % tp == 0);
  ctx.local_tokens = ctx.sequence_sharded ? ctx.tokens / tp : ctx.tokens;
  ctx.elem_bytes = dtype_bytes(workload.dtype);
  check_variant(ctx, tp);

  LayerGraph graph(tp);
  ProgramBuilder builder(graph, ctx.elem_bytes);
  builder.set_collective_algorithm(variant.algorithm);
  builder.set_collective_protocol(variant.protocol);
  builder.set_gemm_fp8(workload.dtype == Dtype::kFp8);
  builder.set_attention_fp8(workload.attention_dtype == Dtype::kFp8);
  DtpState dtp(static_cast<int>(2 * workload.layers));
  ModuleInput hidden;
  for (int64_t layer = 0; layer < workload.layers; ++layer) {
    builder.set_layer(static_cast<int>(layer));
    builder.set_module(static_cast<int>(2 * layer));
    hidden = attention_module(builder, ctx, dtp, dtp.before_module(builder, ctx, hidden));
    builder.set_module(static_cast<int>(2 * layer + 1));
    hidden = ffn_module(builder, ctx, dtp, dtp.before_module(builder, ctx, hidden));
  }
  builder.set_module(-1);
  const OpId normed = rms_norm(builder, "final.norm", ctx.local_tokens, arch.hidden, hidden.deps());
  dtp.final_reduction(builder, ctx, normed);
  return graph;
}

LayerGraph build_layer_graph(const ArchSpec& arch, const Workload& workload, int tp, const Variant& variant) {
  return build_pass_graph(arch, workload, primary_pass(workload), tp, variant);
}

}  // namespace tpsim::model
