// Async TP (collective matmul): AG+GEMM and GEMM+RS decomposed into chunks pipelined over P2P steps, the
// GEMM run as a kernel per chunk or as one tile-fused kernel (implementation.async_tp tile_fused). Ignores:
// fused GEMM epilogues (ring partial sums are separate add kernels) and symmetric-memory barriers (their
// cost is inside each step's latency).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/graph/layer_context.hpp"
#include "model/graph/program_builder.hpp"

namespace tpsim::model {

// How tokens are cut: every shard of tokens/tp is split into units_per_shard units; each GEMM piece
// covers units_per_piece consecutive units in arrival (AG) or departure (RS) order.
struct ChunkPlan {
  int units_per_shard = 1;
  int units = 1;
  int pieces = 1;
  int units_per_piece = 1;
  int64_t unit_tokens = 0;
};

ChunkPlan plan_chunks(int64_t tokens, int tp, int chunks);

// Whether the variant pipelines AG+GEMM and GEMM+RS in chunks: async, except one chunk over SMs (that
// is sp's blocking collectives).
bool fused_async(const Variant& variant);

// A column-parallel GEMM of N columns over all tokens (full.m) of a sequence-sharded [local_tokens, K]
// input, under sp or async: the all-gather then the GEMM, or the chunked pipeline. Returns the ops that
// produce the output. With the implementation's sp_layout_copies, a blocking all-gather is followed by a
// copy of the gathered tensor into the GEMM's layout (and a reduce-scatter preceded by one below).
std::vector<OpId> gather_then_gemm(ProgramBuilder& builder, const LayerContext& ctx, const std::string& name,
                                   GemmShape full, std::optional<OpId> local_shard);

// Whether this GEMM's all-gather moves fp8 (Workload fp8_gathers or userbuffers, and the GEMM runs in fp8); then
// cast_shard_for_gather casts the rank's [M / tp, K] shard of `local_shard` first (the input, or under a
// ".dgrad" name the output gradient), else returns it as it is.
bool gathers_fp8(const ProgramBuilder& builder, const LayerContext& ctx);
// Whether the variant's pipelines run as Transformer Engine's userbuffers (implementation.async_tp userbuffers):
// all-gathers relayed in a ring, reduce-scatters sent straight to their owners, all-gathers in fp8 under an fp8
// recipe (TE's fp8_buf for every all-gather buffer), whatever the variant's order.
bool uses_userbuffers(const LayerContext& ctx);
std::optional<OpId> cast_shard_for_gather(ProgramBuilder& builder, const LayerContext& ctx, const std::string& name,
                                          GemmShape full, std::optional<OpId> local_shard);

// The blocking reduce-scatter of a GEMM's [M, N] `product`, after its layout copy where the implementation
// has them, and issued after `after` (ordering only).
OpId scatter_product(ProgramBuilder& builder, const LayerContext& ctx, const std::string& name, GemmShape full,
                     OpId product, const std::vector<OpId>& after = {});

// A row-parallel GEMM of N columns over all tokens reduced to the rank's [local_tokens, N] shard, under
// sp or async: the GEMM then the reduce-scatter, or the chunked pipeline. Returns the ops that finish
// the shard.
std::vector<OpId> gemm_then_scatter(ProgramBuilder& builder, const LayerContext& ctx, const std::string& name,
                                    GemmShape full, const std::vector<OpId>& inputs);

// Norm applied to each gathered piece when the all-gather is issued before the RMSNorm.
struct PieceNorm {
  std::string name;
};

// All-gather of the local [local_tokens, K] shard fused with a GEMM of N columns: returns the GEMM pieces.
std::vector<OpId> async_gather_gemm(ProgramBuilder& builder, const LayerContext& ctx, const std::string& name,
                                    GemmShape full, std::optional<OpId> local_shard,
                                    const std::optional<PieceNorm>& piece_norm);

// GEMM of N columns over all tokens fused with a reduce-scatter: returns the ops that finish the
// rank's reduced [local_tokens, N] shard.
std::vector<OpId> async_gemm_scatter(ProgramBuilder& builder, const LayerContext& ctx, const std::string& name,
                                     GemmShape full, const std::vector<OpId>& inputs);

}  // namespace tpsim::model
