// The JSON result of a scenario run: resolved inputs and one record per variant.
#pragma once

#include <string>

#include "sim/scenario_run.hpp"

namespace tpsim::cli {

std::string result_json(const sim::ScenarioRun& run);

}  // namespace tpsim::cli
