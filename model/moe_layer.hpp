// An MoE FFN module, forward and backward, as Megatron's all-to-all token dispatcher runs it with expert TP 1:
// RMSNorm, router GEMM and top-k, the permutation of each token's copies by expert, the dispatch all-to-all
// over the expert-parallel group, the local experts' grouped gate/up GEMM, SwiGLU and grouped down GEMM, the
// combine all-to-all back, and the un-permutation that sums each token's copies by the router's weights. Every
// op outside the experts runs over the rank's rows of the residual stream (its 1/tp under sequence
// parallelism); the experts compute the busiest GPU's copies (moe_routing.hpp).
#pragma once

#include "model/decoder_layer.hpp"

namespace tpsim::model {

ModuleInput moe_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const ModuleInput& input,
                        SavedModule* saved);

// moe_forward in three stages, so that two micro-batches' stages can interleave (two-batch overlap: one's
// all-to-all beside the other's compute): the router, top-k, permutation and dispatch; the experts and the
// combine; the un-permutation, the shared expert and the residual add. What one stage hands the next:
struct MoeForward {
  ModuleInput input;
  std::vector<OpId> normed;  // the router's input rows
  OpId top_k = 0, received = 0, gate_up = 0, act = 0, returned = 0;
};
MoeForward moe_forward_dispatch(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const ModuleInput& input);
void moe_forward_experts(ProgramBuilder& b, const LayerContext& ctx, const TpStrategy& tp, MoeForward& f);
ModuleInput moe_forward_combine(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const MoeForward& f,
                                SavedModule* saved);
ModuleInput moe_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const SavedModule& saved,
                         const ModuleInput& grad);

}  // namespace tpsim::model
