// A scenario's sweep: the cartesian product of its `sweep:` axes, each point a fully checked scenario.
// Axes are dotted paths: workload.<key>, hardware.<key>, parallelism.<key>, variants.<name>.<key>,
// model, calibration. The last axis varies fastest.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "model/scenario.hpp"

namespace tpsim::model {

struct SweepPoint {
  std::vector<std::pair<std::string, std::string>> values;  // (axis, value as written), in axis order
  Scenario scenario;
};

// One point per combination of values; a scenario without a sweep is its own single point.
// Throws InputError at the sweep entry that names a bad path or value.
std::vector<SweepPoint> expand_sweep(const Scenario& base);

}  // namespace tpsim::model
