// When each stage's host has launched each op of a program.
#include "sim/engine/runner/host_launch.hpp"

namespace tpsim::sim {

// The host (each stage's) issues ops in program order: each costs a launch, a wait per dependency on another
// stream of the same rank, and for an NCCL call the framework's own host time; op `id` is launched once
// all of that before it (and its own) is done.
std::vector<double> host_launch_times(const model::LayerGraph& graph, const std::vector<CommPlan>& plans,
                                      const EngineOptions& options, int stages) {
  const size_t count = graph.size();
  std::vector<double> launched_s(count * stages);
  for (int stage = 0; stage < stages; ++stage) {
    double host_s = 0;
    for (model::OpId id = 0; id < count; ++id) {
      const model::Op& op = graph.op(id);
      if (!model::runs_on_stage(op, stage)) continue;
      if (op.continues_kernel) {
        // A later part of a tile-fused kernel the host launched with its first part (the part's waits on
        // other streams are the kernel's own signal waits on the GPU, launch.gpu_wait_us, not host events), or
        // memory-bound work fused into the kernel before it.
        launched_s[id * stages + stage] = host_s;
        continue;
      }
      int waits = 0;
      for (const model::Dep& dep : op.deps) {
        if (waits_across_streams(graph, op, dep) && model::runs_on_stage(graph.op(dep.op), stage)) ++waits;
      }
      host_s += options.host_launch_s + waits * options.stream_wait_s;
      if (plans[id].nccl_call) host_s += options.collective_host_s;
      launched_s[id * stages + stage] = host_s;
    }
  }
  return launched_s;
}

}  // namespace tpsim::sim
