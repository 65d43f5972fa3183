// The attention core of a layer under context parallelism (model/parallel/context_parallel.hpp): the local queries'
// causal attention over the whole sequence's keys, in the blocks and with the K/V exchanges of the pass's
// cp_comm_type, each block costed as attention_core's kernel is. The exchanges run over the CP group (CommGroup::kData
// ops of cp members, the TP group's size apart: closed form, or step by step under --no-symmetry) on the comm2 stream.
// Ignores TE's per-step output and softmax-statistics corrections (memory-bound, a few bytes per query).
#pragma once

#include <vector>

#include "model/graph/layer_context.hpp"
#include "model/graph/program_builder.hpp"

namespace tpsim::model {

// The stream the K/V exchanges run on (a process group of their own, beside the TP and data-parallel groups').
inline constexpr Stream kContextParallelStream = Stream::kComm2;

// The forward: returns the op whose completion leaves the attention output.
OpId context_parallel_attention(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& input);
// The backward: returns the op whose completion leaves dQ, dK and dV on the rank's own tokens.
OpId context_parallel_attention_backward(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& deps);

// One rank's K and V of the pass (its seq_len / cp tokens): the bytes a ring step sends, in the attention's width.
double context_parallel_kv_bytes(const LayerContext& ctx, double kv_elem_bytes);

}  // namespace tpsim::model
