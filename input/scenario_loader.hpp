// Reads a scenario from a parsed YAML document (a sweep's points, a plan's probe); model/scenario.hpp reads files.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "model/scenario.hpp"

namespace tpsim::model {

// A scenario from a parsed document; `file` is used in messages and to resolve relative paths.
Scenario parse_scenario_node(const YAML::Node& root, const std::string& file);

}  // namespace tpsim::model
