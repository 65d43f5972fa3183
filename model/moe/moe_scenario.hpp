// A scenario's expert parallelism: parallelism.ep and the moe section read into the workload, and what an MoE
// model cannot run with yet refused at its key.
#pragma once

#include "input/yaml_reader.hpp"
#include "model/moe/moe_routing.hpp"
#include "model/scenario.hpp"

namespace tpsim::model {

// After the model, parallelism, workload, data parallelism and variants are read: sets
// out.workload.expert_parallel from parallelism.ep and root's moe section, refusing ep or moe without an MoE
// model, ep not a multiple of tp, not dividing the experts, or (train) not dividing tp x dp; and with an MoE
// model: pipelines under ep > 1, FSDP, fp8, and variants holding every token on every rank (tp, dtp) under
// tp > 1.
void read_expert_parallel(const YamlReader& in, const YAML::Node& root, Scenario& out);

// The routing of an MoE scenario's primary pass over its simulated layers (each rank routing its 1/tp of the
// pass's tokens), as the report states it.
RoutingSummary scenario_routing(const Scenario& s);

}  // namespace tpsim::model
