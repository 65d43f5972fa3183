// The routing an MoE scenario's report states, and the scenario under balanced routing (the scenario's reader:
// input/section_readers.cpp).
#include "model/moe/moe_scenario.hpp"

namespace tpsim::model {

RoutingSummary scenario_routing(const Scenario& s) {
  return summarize_routing(s.arch.moe, s.workload.expert_parallel, primary_pass(s.workload).tokens() / s.parallelism.tp,
                           s.workload.layers);
}

Scenario with_balanced_routing(const Scenario& s) {
  Scenario balanced = s;
  balanced.workload.expert_parallel.routing = Routing::kBalanced;
  balanced.workload.expert_parallel.drop = false;
  return balanced;
}

}  // namespace tpsim::model
