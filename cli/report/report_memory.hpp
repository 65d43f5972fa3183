// The memory report (`tpsim run --memory`): per GPU, each part of what a variant holds, under a pipeline per stage.
#pragma once

#include <string>

#include "sim/run/scenario_run.hpp"

namespace tpsim::cli {

// Per variant (per stage under a pipeline), in GiB: the tensors by kind, what the allocator and the runtime add
// beside them, against the GPU's usable HBM. Empty for op lists.
std::string memory_table(const sim::ScenarioRun& run);

// One line under the comparison table: what the memory column counts.
std::string memory_note(const sim::ScenarioRun& run);

}  // namespace tpsim::cli
