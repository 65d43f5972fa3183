// Chrome trace JSON (opens in Perfetto): one process per variant and GPU, one thread per stream.
#pragma once

#include <string>

#include "sim/scenario_run.hpp"

namespace tpsim::sim {

std::string chrome_trace_json(const ScenarioRun& run);

}  // namespace tpsim::sim
