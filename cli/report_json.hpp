// The JSON result of a scenario run: resolved inputs and one record per variant.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/scenario_run.hpp"

namespace tpsim::cli {

// A run of one sweep point: its axis values (empty without a sweep) and results.
struct PointRun {
  std::vector<std::pair<std::string, std::string>> values;
  sim::ScenarioRun run;
};

// {"scenario": resolved inputs of the first point, "results": one row per point and variant}; rows
// of a sweep carry their point's axis values under "point".
std::string result_json(const std::vector<PointRun>& points);

}  // namespace tpsim::cli
