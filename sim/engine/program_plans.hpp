// The plan of every communication op of a program as the engine runs it, made once before the run.
#pragma once

#include <memory>
#include <vector>

#include "model/graph/layer_graph.hpp"
#include "sim/cost/cost_model.hpp"
#include "sim/engine/comm_plan.hpp"

namespace tpsim::sim {

// The plan of every communication op of `graph` as the engine runs it, indexed by op id (a default plan
// for kernels): data-group collectives in closed form, or step by step between the members when
// `data_group_members` (--no-symmetry). Throws PlanError (naming the op and the setting that asked for it) where the
// profile or fabric cannot run an op's collective.
std::shared_ptr<const std::vector<CommPlan>> plan_program(const model::LayerGraph& graph, const CostModel& cost,
                                                          bool data_group_members = false);

}  // namespace tpsim::sim
