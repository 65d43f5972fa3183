// One training step of one TP group (phase train): per micro-batch the embedding, the forward of every
// layer, the final norm, LM head and loss, then all of it backward in reverse, each layer's forward re-run
// before its backward (full recomputation) or its unsaved outputs recomputed (selective); then the
// optimizer. Ignores (for now): fp8 recipes.
#pragma once

#include "model/graph/layer_context.hpp"
#include "model/graph/layer_graph.hpp"
#include "model/parallel/tp_strategy.hpp"

namespace tpsim::model {

// The optimizer's op that scales the gradients by the clipping factor: the first to need the whole model's gradient
// norm (under a pipeline, every stage's).
inline constexpr const char* kClipOpName = "optimizer.clip";

// The step's ops appended to `b`'s graph for the context's pass (one micro-batch's tokens; under two-batch overlap
// one half of a micro-batch's, two_batch_step.hpp).
void build_train_step(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& strategy);

}  // namespace tpsim::model
