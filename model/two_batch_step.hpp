// Two-batch overlap in a training step (variant.two_batch_overlap, phase train): each micro-batch as two halves of
// its sequences whose MoE stages interleave, forward and backward, so that one half's all-to-alls run beside the
// other's compute (the overlap Megatron's EP A2A overlap and DualPipe build on, within one micro-batch).
#pragma once

#include "model/data_parallel_sync.hpp"
#include "model/layer_context.hpp"
#include "model/tp_strategy.hpp"

namespace tpsim::model {

// One micro-batch (`ctx`: one half's pass, its ops named <prefix>half0. and half1.): the embedding of each half,
// per layer the data-parallel unit's gather once, both halves' attention modules in turn, then each MoE stage
// (dispatch, experts, combine) of half 0 and half 1 (a dense layer's FFN of each in turn); the head and loss of
// each; backward per layer the MoE stages mirrored (combine's, experts', dispatch's) of half 0 and half 1, both
// attention modules', the unit's reduction once. No recomputation.
void two_batch_micro_batch(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& strategy, DataParallelSync& sync,
                           int64_t mb, const std::string& prefix);

}  // namespace tpsim::model
