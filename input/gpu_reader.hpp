// Reads a GPU (a preset or a scenario's inline mapping) into the simulator's GpuSpec, every error located.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "input/yaml_reader.hpp"
#include "sim/cost/gpu_spec.hpp"
#include "sim/cost/runtime_memory.hpp"

namespace tpsim::sim {

// The `runtime_memory:` block of a GPU mapping.
RuntimeMemorySpec read_runtime_memory(const model::YamlReader& in, const YAML::Node& node);
// Reads a GPU mapping (preset file or inline scenario mapping) with `reader` for error locations.
GpuSpec read_gpu_spec(const model::YamlReader& reader, const YAML::Node& node);
// hardware.gpu: a preset name or an inline mapping; `node` locates errors in `scenario_file`.
GpuSpec resolve_gpu(const std::string& scenario_file, const std::string& name, const YAML::Node& node);

}  // namespace tpsim::sim
