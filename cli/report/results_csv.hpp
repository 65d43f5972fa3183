// The CSV of result rows (one per point and variant), as `tpsim sweep` writes results.csv and `tpsim run
// --csv` writes a run: the point index, its axis values, then a fixed set of metric columns.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "input/sweep.hpp"

namespace tpsim::cli {

struct CsvPoint {
  size_t index = 0;
  model::AxisValues values;                  // the point's axis values (every point has the same axes)
  std::vector<nlohmann::ordered_json> rows;  // result rows (report_json.hpp's result_row)
};

std::string results_csv(const std::vector<CsvPoint>& points);

}  // namespace tpsim::cli
