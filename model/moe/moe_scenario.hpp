// What a report states of an MoE scenario's routing, and the same scenario under balanced routing.
#pragma once

#include "model/moe/moe_routing.hpp"
#include "model/scenario.hpp"

namespace tpsim::model {

// The routing of an MoE scenario's primary pass over its simulated layers (each rank routing its 1/tp of the
// pass's tokens), as the report states it.
RoutingSummary scenario_routing(const Scenario& s);

// The scenario with its experts' tokens routed balanced and dropless: what its routing's skew costs is the
// difference of the two runs.
Scenario with_balanced_routing(const Scenario& s);

}  // namespace tpsim::model
