// Reads a scenario's variants (the TP modes it compares) and checks each against the scenario (variant_reader.cpp).
#pragma once

#include <string>
#include <vector>

#include "input/yaml_reader.hpp"
#include "model/scenario.hpp"

namespace tpsim::model {

// The keys a variant may give.
const std::vector<std::string>& variant_keys();

// Reads `variants:` (a non-empty list, the first the baseline) into out.variants, after the workload, parallelism and
// implementation are read; refuses at its key what a variant cannot run.
void read_variants(const YamlReader& in, const YAML::Node& node, Scenario& out);

}  // namespace tpsim::model
