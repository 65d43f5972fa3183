// Builds the chunked AG+GEMM and GEMM+RS pipelines in ring or direct order.
#include "model/parallel/async_tp.hpp"

#include "base/input_error.hpp"
#include "model/parallel/symm_mem_async_tp.hpp"

namespace tpsim::model {
namespace {

std::string unit_name(int step, int sub) {
  return std::to_string(step) + "." + std::to_string(sub);
}

// GEMM piece `piece` of linear `name` over `full`: a kernel of its own, or a part of the linear's one
// tile-fused kernel.
OpId piece_gemm(ProgramBuilder& builder, const LayerContext& ctx, const std::string& name, int piece, GemmShape shape,
                const GemmShape& full, const std::vector<OpId>& deps) {
  if (ctx.workload.implementation.async_tp == AsyncTpKernel::kTileFused) {
    return builder.gemm_part(name, piece, shape, full.m, deps);
  }
  return builder.gemm_piece(name, piece, shape, deps);
}

std::vector<OpId> piece_deps(const std::vector<std::vector<OpId>>& unit_ready, int piece, int per_piece) {
  std::vector<OpId> deps;
  for (int u = piece * per_piece; u < (piece + 1) * per_piece; ++u) {
    deps.insert(deps.end(), unit_ready[u].begin(), unit_ready[u].end());
  }
  return deps;
}

}  // namespace

ChunkPlan plan_chunks(int64_t tokens, int tp, int chunks) {
  if (const std::string why = check_chunks(chunks, tp); !why.empty()) throw InputError(why);
  ChunkPlan plan;
  plan.units_per_shard = chunks > tp ? chunks / tp : 1;
  plan.units = tp * plan.units_per_shard;
  plan.pieces = chunks;
  plan.units_per_piece = plan.units / chunks;
  if (tokens % plan.units != 0) {
    throw InputError("tokens (batch x seq_len = " + std::to_string(tokens) + ") must be divisible by " +
                     std::to_string(plan.units) + " to cut them into " + std::to_string(chunks) +
                     " chunks over tp=" + std::to_string(tp));
  }
  plan.unit_tokens = tokens / plan.units;
  return plan;
}

bool fused_async(const Variant& variant) {
  return variant.mode == TpMode::kAsync && !(variant.chunks == 1 && variant.transport == Transport::kSm);
}

bool gathers_fp8(const ProgramBuilder& builder, const LayerContext& ctx) {
  return (fp8_gathers(ctx.workload) || uses_userbuffers(ctx)) && builder.gemm_fp8();
}

bool uses_userbuffers(const LayerContext& ctx) {
  return ctx.workload.implementation.async_tp == AsyncTpKernel::kUserbuffers && fused_async(ctx.variant);
}

std::optional<OpId> cast_shard_for_gather(ProgramBuilder& builder, const LayerContext& ctx, const std::string& name,
                                          GemmShape full, std::optional<OpId> local_shard) {
  if (!gathers_fp8(builder, ctx)) return local_shard;
  const std::string operand = gemm_role_of(name) == GemmRole::kForward ? ".x" : ".dy";
  const std::vector<OpId> deps = local_shard ? std::vector<OpId>{*local_shard} : std::vector<OpId>{};
  return builder.cast_to_fp8(name + operand, full.m / builder.tp(), full.k, deps);
}

std::vector<OpId> gather_then_gemm(ProgramBuilder& builder, const LayerContext& ctx, const std::string& name,
                                   GemmShape full, std::optional<OpId> local_shard) {
  if (fused_async(ctx.variant)) return async_gather_gemm(builder, ctx, name, full, local_shard, std::nullopt);
  const bool fp8 = gathers_fp8(builder, ctx);
  const double bytes = static_cast<double>(full.m * full.k) * (fp8 ? kFp8Bytes : builder.elem_bytes());
  const std::optional<OpId> shard = cast_shard_for_gather(builder, ctx, name, full, local_shard);
  const std::vector<OpId> deps = shard ? std::vector<OpId>{*shard} : std::vector<OpId>{};
  OpId gathered =
      builder.collective(name + ".all_gather", CollectiveKind::kAllGather, bytes, shape_text(full.m, full.k), deps);
  if (ctx.layout_copies()) {
    gathered =
        builder.memory(name + ".all_gather.layout_copy", bytes, bytes, 0, shape_text(full.m, full.k), {gathered});
    builder.mark_saved_as(gathered, SavedAs::kAllGather);  // the gathered input, in the layout the GEMM reads
  }
  builder.set_a_quantised(fp8);
  const OpId gemm = builder.gemm(name, full, {gathered});
  builder.set_a_quantised(false);
  return {gemm};
}

OpId scatter_product(ProgramBuilder& builder, const LayerContext& ctx, const std::string& name, GemmShape full,
                     OpId product, const std::vector<OpId>& after) {
  const double bytes = static_cast<double>(full.m * full.n) * builder.elem_bytes();
  if (ctx.layout_copies()) {
    product =
        builder.memory(name + ".reduce_scatter.layout_copy", bytes, bytes, 0, shape_text(full.m, full.n), {product});
  }
  return builder.collective(name + ".reduce_scatter", CollectiveKind::kReduceScatter, bytes, shape_text(full.m, full.n),
                            {product}, after);
}

std::vector<OpId> gemm_then_scatter(ProgramBuilder& builder, const LayerContext& ctx, const std::string& name,
                                    GemmShape full, const std::vector<OpId>& inputs) {
  if (fused_async(ctx.variant)) return async_gemm_scatter(builder, ctx, name, full, inputs);
  return {scatter_product(builder, ctx, name, full, builder.gemm(name, full, inputs))};
}

std::vector<OpId> async_gather_gemm(ProgramBuilder& builder, const LayerContext& ctx, const std::string& name,
                                    GemmShape full, std::optional<OpId> local_shard,
                                    const std::optional<PieceNorm>& piece_norm) {
  if (ctx.workload.implementation.async_tp == AsyncTpKernel::kSymmMem) {
    return symm_mem_gather_gemm(builder, ctx, name, full, local_shard);
  }
  const int tp = builder.tp();
  const ChunkPlan plan = plan_chunks(ctx.tokens, tp, ctx.variant.chunks);
  // Transformer Engine's ring exchange relays each shard rank to rank (CommOverlapP2PBase::split_overlap_ag).
  const bool ring = uses_userbuffers(ctx) || ctx.variant.order == ChunkOrder::kRing;
  const bool fp8 = gathers_fp8(builder, ctx);
  const double unit_bytes = static_cast<double>(plan.unit_tokens * full.k) * (fp8 ? kFp8Bytes : builder.elem_bytes());
  const std::optional<OpId> shard = cast_shard_for_gather(builder, ctx, name, full, local_shard);
  const std::vector<OpId> local = shard ? std::vector<OpId>{*shard} : std::vector<OpId>{};

  // unit_ready[u]: ops after which unit u (step p = u / units_per_shard) is present on this rank.
  std::vector<std::vector<OpId>> unit_ready(plan.units);
  for (int p = 0; p < tp; ++p) {
    for (int q = 0; q < plan.units_per_shard; ++q) {
      const int u = p * plan.units_per_shard + q;
      if (p == 0) {
        unit_ready[u] = local;
        continue;
      }
      const int send_offset = ring ? 1 : -p;
      const int recv_offset = ring ? -1 : p;
      const std::vector<OpId> deps = (ring && p > 1) ? unit_ready[u - plan.units_per_shard] : local;
      const OpId step = builder.exchange(name + ".ag.step" + unit_name(p, q), send_offset, recv_offset, unit_bytes,
                                         ctx.variant.transport, shape_text(plan.unit_tokens, full.k), deps);
      builder.mark_saved_as(step, SavedAs::kAllGather);
      unit_ready[u] = {step};
    }
  }

  const int64_t piece_tokens = plan.unit_tokens * plan.units_per_piece;
  std::vector<OpId> pieces;
  for (int j = 0; j < plan.pieces; ++j) {
    std::vector<OpId> deps = piece_deps(unit_ready, j, plan.units_per_piece);
    if (piece_norm) {
      const double bytes = static_cast<double>(piece_tokens * full.k) * builder.elem_bytes();
      deps = {builder.memory(piece_norm->name + ".piece" + std::to_string(j), bytes + full.k * builder.elem_bytes(),
                             bytes, 4.0 * static_cast<double>(piece_tokens * full.k), shape_text(piece_tokens, full.k),
                             deps)};
    }
    builder.set_a_quantised(fp8);
    pieces.push_back(piece_gemm(builder, ctx, name, j, GemmShape{piece_tokens, full.n, full.k}, full, deps));
    builder.set_a_quantised(false);
  }
  return pieces;
}

std::vector<OpId> async_gemm_scatter(ProgramBuilder& builder, const LayerContext& ctx, const std::string& name,
                                     GemmShape full, const std::vector<OpId>& inputs) {
  if (ctx.workload.implementation.async_tp == AsyncTpKernel::kSymmMem) {
    return symm_mem_gemm_scatter(builder, ctx, name, full, inputs);
  }
  const int tp = builder.tp();
  const ChunkPlan plan = plan_chunks(ctx.tokens, tp, ctx.variant.chunks);
  // Transformer Engine's ring exchange sends each piece straight to its owner and sums the tp partials at the
  // end (CommOverlapP2PBase::split_overlap_rs): the direct order.
  const bool ring = !uses_userbuffers(ctx) && ctx.variant.order == ChunkOrder::kRing;
  const double e = builder.elem_bytes();
  const double unit_bytes = static_cast<double>(plan.unit_tokens * full.n) * e;
  const int64_t piece_tokens = plan.unit_tokens * plan.units_per_piece;
  const std::string unit_shape = shape_text(plan.unit_tokens, full.n);

  std::vector<OpId> sent;           // direct: every exchange; ring: unused
  std::vector<OpId> last_hop;       // ring: exchange of the previous step, per sub-chunk
  std::vector<OpId> finished;       // ops that complete this rank's shard
  std::optional<OpId> own_partial;  // direct: the GEMM piece holding this rank's own rows
  last_hop.resize(plan.units_per_shard);
  for (int j = 0; j < plan.pieces; ++j) {
    const OpId piece = piece_gemm(builder, ctx, name, j, GemmShape{piece_tokens, full.n, full.k}, full, inputs);
    for (int u = j * plan.units_per_piece; u < (j + 1) * plan.units_per_piece; ++u) {
      const int s = u / plan.units_per_shard;  // step: which destination block
      const int q = u % plan.units_per_shard;
      if (!ring) {
        // Direct: destinations rank+1 .. rank+tp-1 first, the rank's own block last.
        const int p = (s + 1) % tp;
        if (p == 0) {
          own_partial = piece;
          continue;
        }
        sent.push_back(builder.exchange(name + ".rs.send" + unit_name(p, q), p, -p, unit_bytes, ctx.variant.transport,
                                        unit_shape, {piece}));
        continue;
      }
      // Ring: block (rank - s - 1) collects one partial per hop and ends on its owner at s = tp-1.
      OpId ready = piece;
      if (s > 0) {
        ready = builder.memory(name + ".rs.add" + unit_name(s, q), 2.0 * unit_bytes, unit_bytes,
                               static_cast<double>(plan.unit_tokens * full.n), unit_shape, {piece, last_hop[q]});
      }
      if (s < tp - 1) {
        last_hop[q] = builder.exchange(name + ".rs.step" + unit_name(s, q), 1, -1, unit_bytes, ctx.variant.transport,
                                       unit_shape, {ready});
      } else {
        finished.push_back(ready);
      }
    }
  }
  if (!ring) {
    std::vector<OpId> deps = sent;
    if (own_partial) deps.push_back(*own_partial);
    const double shard_bytes = static_cast<double>(ctx.local_tokens * full.n) * e;
    finished.push_back(builder.memory(name + ".rs.reduce", tp * shard_bytes, shard_bytes,
                                      static_cast<double>((tp - 1) * ctx.local_tokens * full.n),
                                      shape_text(ctx.local_tokens, full.n), deps));
  }
  for (const OpId op : finished) builder.mark_saved_as(op, SavedAs::kReduceScatter);
  return finished;
}

}  // namespace tpsim::model
