// The human-readable comparison table of a scenario run.
#pragma once

#include <string>

#include "sim/scenario_run.hpp"

namespace tpsim::cli {

std::string comparison_table(const sim::ScenarioRun& run);

}  // namespace tpsim::cli
