// SimGrid allows one simulation per process, so each simulation runs in a forked child that sends
// its timeline back through a pipe. The parent never creates a SimGrid engine.
#pragma once

#include "sim/engine/engine.hpp"

namespace tpsim::sim {

// Simulates `graph` in a child process and returns its timeline; rethrows the child's error.
Timeline simulate(const model::LayerGraph& graph, const CostModel& cost, const EngineOptions& options = {});

}  // namespace tpsim::sim
