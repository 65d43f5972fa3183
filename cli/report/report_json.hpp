// The JSON result of a scenario run: resolved inputs and one record per variant.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "input/sweep.hpp"
#include "sim/run/scenario_run.hpp"

namespace tpsim::cli {

using AxisValues = model::AxisValues;

// A run of one sweep point: its axis values (empty without a sweep) and results.
struct PointRun {
  AxisValues values;
  sim::ScenarioRun run;
};

// One result row: the point's axis values (under "point", when any), the variant, its metrics and its
// memory per GPU against `gpu`'s HBM.
nlohmann::ordered_json result_row(const AxisValues& values, const sim::VariantRun& variant, const sim::GpuSpec& gpu);

// The resolved inputs of a run (model, hardware, profile, workload, parallelism, variants).
nlohmann::ordered_json scenario_json(const sim::ScenarioRun& run);

// {"scenario": resolved inputs of the first point, "results": one row per point and variant}; rows
// of a sweep carry their point's axis values under "point".
// With `critical_path`, each row also holds its passes' critical paths (every link), under a pipeline after the
// step's ("pass": "step", each link's rank its stage).
std::string result_json(const std::vector<PointRun>& points, bool critical_path = false);

}  // namespace tpsim::cli
