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
ModuleInput moe_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const SavedModule& saved,
                         const ModuleInput& grad);

}  // namespace tpsim::model
