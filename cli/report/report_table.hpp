// The human-readable comparison table of a scenario run.
#pragma once

#include <string>
#include <vector>

#include "sim/run/scenario_run.hpp"

namespace tpsim::cli {

std::string comparison_table(const sim::ScenarioRun& run);
// Why collectives of `run` did not run NCCL's own choice, each reason once, added to `notes` where not there yet:
// a run prints them once after all its points.
void add_collective_deviations(const sim::ScenarioRun& run, std::vector<std::string>& notes);
// Each op's start, end and duration on GPU 0, for op-list variants (empty for model workloads).
std::string op_times_table(const sim::ScenarioRun& run);
// Per variant and simulated pass: time by module (attention, ffn, other) and kind (GEMM, attention,
// memory-bound, communication, exposed communication).
std::string breakdown_table(const sim::ScenarioRun& run);
// Per variant and simulated pass: the critical path's shares by kind and its largest op groups.
std::string critical_path_table(const sim::ScenarioRun& run);

}  // namespace tpsim::cli
