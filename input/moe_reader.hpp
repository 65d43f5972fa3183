// Reads a scenario's expert parallelism: parallelism.ep and the moe section into the workload, and what an MoE
// model cannot run with yet refused at its key.
#pragma once

#include <yaml-cpp/yaml.h>

#include "input/yaml_reader.hpp"
#include "model/scenario.hpp"

namespace tpsim::model {

// After the model, parallelism, workload, data parallelism and variants are read: sets
// out.workload.expert_parallel from parallelism.ep and root's moe section, refusing ep or moe without an MoE
// model, ep not a multiple of tp, not dividing the experts, or (train) not dividing tp x dp; and with an MoE
// model: pipelines under ep > 1, FSDP, fp8, and variants holding every token on every rank (tp, dtp) under
// tp > 1.
void read_expert_parallel(const YamlReader& in, const YAML::Node& root, Scenario& out);

}  // namespace tpsim::model
