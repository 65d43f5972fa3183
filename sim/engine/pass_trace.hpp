// One simulated pass kept for reports and traces: its label, its graph and the engine's timeline of it.
#pragma once

#include <string>

#include "model/graph/layer_graph.hpp"
#include "sim/engine/timeline.hpp"

namespace tpsim::sim {

struct PassTrace {
  std::string label;  // "forward", "prefill", "decode step 0", "stage 0 chunk", ...
  model::LayerGraph graph;
  Timeline timeline;
};

}  // namespace tpsim::sim
