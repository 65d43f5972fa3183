// Reads a GPU (a preset or a scenario's inline mapping) into the simulator's GpuSpec, every error located.
#pragma once

#include <yaml-cpp/yaml.h>

#include <exception>
#include <memory>
#include <string>

#include "input/yaml_reader.hpp"
#include "model/scenario.hpp"
#include "sim/cost/gpu_spec.hpp"
#include "sim/cost/runtime_memory.hpp"

namespace tpsim::model {

// An inline hardware.gpu mapping, read when the scenario is: its GPU, or the error reading it gave (kept to be raised
// when the GPU is resolved, where a preset name's errors are).
struct InlineGpu {
  sim::GpuSpec spec;
  std::exception_ptr error;
};

}  // namespace tpsim::model

namespace tpsim::sim {

// The `runtime_memory:` block of a GPU mapping.
RuntimeMemorySpec read_runtime_memory(const model::YamlReader& in, const YAML::Node& node);
// Reads a GPU mapping (preset file or inline scenario mapping) with `reader` for error locations.
GpuSpec read_gpu_spec(const model::YamlReader& reader, const YAML::Node& node);
// Reads hardware.gpu's inline mapping for the scenario (model::GpuRef); errors are kept, not thrown.
std::shared_ptr<const model::InlineGpu> read_inline_gpu(const model::YamlReader& reader, const YAML::Node& node);
// The scenario's hardware.gpu: its inline mapping, or the preset it names; errors are located in the scenario.
GpuSpec resolve_gpu(const model::Scenario& scenario);

}  // namespace tpsim::sim
