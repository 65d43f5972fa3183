// The work of one simulation, estimated before it starts from its program, plans and members: the activities the
// engine will start (time) and the state it holds per op and GPU (memory), so that what cannot finish in bounded
// time and memory is refused with the estimate, the limit and what would run instead. Ignores: SimGrid's own
// per-activity state, bounded by the activities in flight at once (the engine reuses its records).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/graph/layer_graph.hpp"
#include "sim/engine/comm_plan.hpp"
#include "sim/engine/engine.hpp"

namespace tpsim::sim {

struct WorkEstimate {
  int64_t gpus = 0;         // simulated GPUs: tp x replicas x stages
  double op_instances = 0;  // ops x the GPUs each runs on
  double activities = 0;
  double seconds = 0;  // the activities' time at the measured rates (kActivitySeconds)
  double bytes = 0;
};

// A program's work. Per op and GPU: a kernel up to three activities (the launch gate, its overhead, its work); a
// collective two (launch gate, call latency) and per flow it starts two (its step latency, its transfer), one part per
// rail when striped; the bytes of an op's state on a GPU (kBytesPerOpInstance) and of each simulated GPU's platform.
WorkEstimate estimate_work(const model::LayerGraph& graph, const std::vector<CommPlan>& plans,
                           const EngineOptions& options);

// The work of a program with `ops` ops on `gpus` simulated GPUs, its activities unknown yet (0): for the memory a
// program costs before it is built.
WorkEstimate estimate_program_memory(double ops, int64_t gpus);

// Throws InputError when `work` is past kMaxSimulationSeconds or kMaxSimulationBytes (base/limits.hpp): one line
// with the estimate, the limit, and `instead` (what would run: the symmetric run, fewer layers).
void refuse_unbounded_work(const WorkEstimate& work, const std::string& instead);

// What would run instead of a simulation refused under `options`: the symmetric run where every member was simulated
// (--no-symmetry), else a smaller program.
std::string smaller_alternative(const EngineOptions& options);

}  // namespace tpsim::sim
