// Activation memory of a training step from its tensor identities: what the forward saves for the
// backward, and what a layer's recomputation holds while that layer's backward runs.
#pragma once

#include "model/layer_graph.hpp"

namespace tpsim::model {

// Bytes live at the start of the backward of a one-micro-batch step graph: the outputs of forward ops
// read by backward or recomputed ops, plus the largest set one layer's recomputation saves for its
// backward (zero without recomputation).
double saved_activation_peak_bytes(const LayerGraph& step);

}  // namespace tpsim::model
