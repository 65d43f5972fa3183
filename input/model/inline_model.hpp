// A scenario's inline model: a mapping of config.json shape keys (plus name), read by the same rules
// as a config.json; an absent model_type means llama.
#pragma once

#include <yaml-cpp/yaml.h>

#include "input/yaml_reader.hpp"
#include "model/layers/arch_spec.hpp"

namespace tpsim::model {

ArchSpec read_inline_model(const YamlReader& in, const YAML::Node& node);

}  // namespace tpsim::model
