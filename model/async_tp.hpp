// Async TP (collective matmul): AG+GEMM and GEMM+RS decomposed into chunks pipelined over P2P steps.
// Ignores: fused GEMM epilogues (ring partial sums are separate add kernels) and symmetric-memory
// barriers (their cost is inside each step's latency).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/layer_context.hpp"
#include "model/program_builder.hpp"

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
