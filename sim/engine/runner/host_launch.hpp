// When each stage's host has launched each op of a program: in program order, a launch each, a wait per dependency on
// another stream of its GPU, and the framework's own time per NCCL call.
#pragma once

#include <vector>

#include "model/graph/layer_graph.hpp"
#include "sim/engine/comm_plan.hpp"
#include "sim/engine/engine.hpp"

namespace tpsim::sim {

// Whether `op` waits, on its own GPU, for op `dep` of another stream: the host records an event and
// waits on it, and the GPU resolves that wait.
inline bool waits_across_streams(const model::LayerGraph& graph, const model::Op& op, const model::Dep& dep) {
  return dep.rank_offset == 0 && graph.op(dep.op).stream != op.stream;
}

// Per op and stage (at op · stages + stage): the host time at which that stage's host has launched the op, with the
// launch costs of `options` and the NCCL calls of `plans` (0 for an op the stage does not run).
std::vector<double> host_launch_times(const model::LayerGraph& graph, const std::vector<CommPlan>& plans,
                                      const EngineOptions& options, int stages);

}  // namespace tpsim::sim
