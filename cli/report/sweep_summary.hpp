// The table `tpsim run` prints after the points of a sweep: one row per point, each variant's time.
#pragma once

#include <string>
#include <vector>

#include "cli/report/report_json.hpp"

namespace tpsim::cli {

// A row per point (its axis values), a column per variant (by position; named as in the first point): the time in
// ms and the speedup over the point's first variant; "!" where the variant does not fit the GPU's HBM. Empty for
// fewer than two points.
std::string sweep_summary_table(const std::vector<PointRun>& runs);

}  // namespace tpsim::cli
