// Activation memory of a training step from its tensor identities: what the forward saves for the
// backward, and what a layer's recomputation holds while that layer's backward runs.
#pragma once

#include "model/graph/layer_graph.hpp"

namespace tpsim::model {

// Bytes live at the start of the backward of a one-micro-batch step graph: the outputs of forward ops
// read by backward or recomputed ops, plus the largest set one layer's recomputation saves for its
// backward (zero without recomputation).
double saved_activation_peak_bytes(const LayerGraph& step);

// The two parts of that peak: what the forward saves (held per micro-batch in flight), and the largest set
// one layer's recomputation saves (held once, while that layer's backward runs).
struct SavedActivations {
  double forward_bytes = 0;
  double recompute_bytes = 0;
};
SavedActivations saved_activations(const LayerGraph& step);

}  // namespace tpsim::model
