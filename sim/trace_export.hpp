// Chrome trace JSON (opens in Perfetto): one process per variant, pass and GPU, one thread per stream; under a
// pipeline, one more process per variant with a thread per stage: its passes over the step and its optimizer.
#pragma once

#include <string>

#include "sim/scenario_run.hpp"

namespace tpsim::sim {

std::string chrome_trace_json(const ScenarioRun& run);

}  // namespace tpsim::sim
