// Reads parallelism.cp and parallelism.cp_comm_type, and refuses at its key what context parallelism does not model.
#pragma once

#include "input/yaml_reader.hpp"
#include "model/scenario.hpp"

namespace tpsim::model {

// parallelism.cp_comm_type: p2p, all_gather or a2a (Megatron-LM's --cp-comm-type, Transformer Engine's names).
CpCommType read_cp_comm_type(const YamlReader& in, const YAML::Node& node, int cp);

// Once the workload is read: checks parallelism.cp against the phase, the sequence, the model, the mesh order and the
// comm type, and sets the workload's ContextParallel. One located line for each combination not modelled.
void apply_context_parallel(const YamlReader& in, const YAML::Node& parallelism, Scenario& out);

}  // namespace tpsim::model
