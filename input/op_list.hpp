// Custom op lists (workload phase "ops"): a micro-experiment written op by op (GEMMs, collectives,
// point-to-point transfers, device copies, elementwise kernels) with streams and dependencies,
// run on every rank of the TP group, e.g. a GEMM overlapped with an all-gather over SMs or copy
// engines, the experiments real/ measures.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "input/yaml_reader.hpp"
#include "model/graph/op_list.hpp"

namespace tpsim::model {

// Reads workload.ops; names must be unique and `after` may name only earlier ops.
std::vector<OpSpec> read_op_list(const YamlReader& in, const YAML::Node& ops);

}  // namespace tpsim::model
