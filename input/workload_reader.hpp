// The scenario's workload section: the phase, the batch and lengths, the dtypes, and a training step's keys
// (micro-batches or the global batch, recomputation, the save list, the optimizer, the fp8 recipe), with locations.
#pragma once

#include <string>
#include <vector>

#include "input/yaml_reader.hpp"
#include "model/scenario.hpp"

namespace tpsim::model {

// The keys a workload section may hold.
const std::vector<std::string>& workload_keys();

// Reads `node` into out.workload; needs out.arch and out.parallelism read first (the model's layers and widths,
// dp for the global batch).
void read_workload(const YamlReader& in, const YAML::Node& node, Scenario& out);

}  // namespace tpsim::model
