// Activation memory of a training step from its tensor identities: what the forward saves for the
// backward, and what a layer's recomputation holds while that layer's backward runs.
#pragma once

#include "model/graph/layer_graph.hpp"
#include "model/layers/implementation.hpp"

namespace tpsim::model {

// Bytes live at the start of the backward of a one-micro-batch step graph: the outputs of forward ops
// read by backward or recomputed ops, plus the largest set one layer's recomputation saves for its
// backward (zero without recomputation).
double saved_activation_peak_bytes(const LayerGraph& step, SavedGemmInputs inputs = SavedGemmInputs::kAsRead);

// The two parts of that peak: what the forward saves (held per micro-batch in flight), and the largest set
// one layer's recomputation saves (held once, while that layer's backward runs).
struct SavedActivations {
  double forward_bytes = 0;
  double recompute_bytes = 0;
};
// A saved tensor counts its producer's output bytes, except where Transformer Engine keeps a linear's input
// (SavedGemmInputs::kTransformerEngine): a bf16 tensor only fp8 GEMMs' inputs read in the backward (a weight
// gradient's cast, or the all-gather that gathers its rows again first) is kept as a one-byte copy instead, and one
// another backward reads too (the attention output) is kept beside that copy.
SavedActivations saved_activations(const LayerGraph& step, SavedGemmInputs inputs = SavedGemmInputs::kAsRead);

// The bytes a forward or recomputed op's output holds until the backward (0: nothing after it reads it), given every
// op's readers (LayerGraph::consumers).
double saved_bytes(const LayerGraph& step, const std::vector<std::vector<OpId>>& readers, OpId id,
                   SavedGemmInputs inputs);

}  // namespace tpsim::model
