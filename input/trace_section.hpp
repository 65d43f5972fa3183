// Reads a scenario's `trace:` section: the steps each trace of the step holds, the module rules it adds and,
// for a step traced as rows (a CSV of kernels and blocks), the ops each row stands for.
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

// A traced row (variant, order) and GPU 0's ops it stands for: `ops` summed, or the span from `span_first`'s
// start to `span_last`'s end; op names without their layer's L<i>.
struct TraceRowOps {
  std::string variant;
  int order = 0;
  std::vector<std::string> ops;
  std::string span_first, span_last;
};

// The scenario's trace section; steps 0 when the scenario does not say.
struct TraceSection {
  int steps = 0;
  std::vector<TraceModuleRule> rules;
  std::vector<TraceRowOps> rows;
};

// Reads `trace:` of the scenario (empty if absent); a rule's module must be one of `module_names`. Errors are
// located at the key (InputError).
TraceSection read_trace_section(const model::Scenario& scenario, const std::vector<std::string>& module_names);

}  // namespace tpsim::model
