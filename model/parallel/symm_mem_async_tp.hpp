// Async TP as PyTorch's symmetric-memory ops run it (torch/distributed/_symmetric_memory/__init__.py,
// fused_all_gather_matmul and fused_matmul_reduce_scatter): one GEMM piece per rank's shard, on two
// streams taken in turn, copy-engine pulls that never overlap one another, and the barriers, staging
// copies and final reduction the ops add around the pipeline.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/graph/layer_context.hpp"
#include "model/graph/program_builder.hpp"

namespace tpsim::model {

// AG+GEMM: a barrier; the local [tokens/tp, K] shard copied into the rank's symmetric buffer; a barrier;
// the local shard's GEMM piece; then for steps 1..tp-1, on the backend stream (odd steps) or the current
// one (even), the pull of rank+step's shard and its piece; the local shard copied into the gathered
// output; the current stream joins the backend one and a closing barrier. Returns the pieces and the
// closing barrier.
std::vector<OpId> symm_mem_gather_gemm(ProgramBuilder& b, const LayerContext& ctx, const std::string& name,
                                       GemmShape full, std::optional<OpId> local_shard);

// GEMM+RS: for steps 1..tp-1 on alternating streams, the piece of rank+step's rows into a symmetric
// buffer, a barrier, the pull of the piece rank-step computed for this rank's rows, a barrier (the buffer
// may then be overwritten); the piece of the rank's own rows; a kernel summing the tp partials. Returns
// the reduction.
std::vector<OpId> symm_mem_gemm_scatter(ProgramBuilder& b, const LayerContext& ctx, const std::string& name,
                                        GemmShape full, const std::vector<OpId>& inputs);

}  // namespace tpsim::model
