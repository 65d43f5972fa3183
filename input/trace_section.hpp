// Reads a scenario's `trace:` section: the steps each trace of the step holds and the module rules it adds.
#pragma once

#include <string>
#include <vector>

#include "model/scenario.hpp"

namespace tpsim::model {

// One rule: an op or kernel name containing `match` belongs to `module`.
struct TraceModuleRule {
  std::string match;
  std::string module;
};

// The scenario's trace section; steps 0 when the scenario does not say.
struct TraceSection {
  int steps = 0;
  std::vector<TraceModuleRule> rules;
};

// Reads `trace:` of the scenario (empty if absent); a rule's module must be one of `module_names`. Errors are
// located at the key (InputError).
TraceSection read_trace_section(const model::Scenario& scenario, const std::vector<std::string>& module_names);

}  // namespace tpsim::model
