// Counting a program's activities and state before the engine runs it.
#include "sim/engine/work_estimate.hpp"

#include "base/input_error.hpp"
#include "base/limits.hpp"
#include "base/units.hpp"
#include "sim/engine/data_group.hpp"

namespace tpsim::sim {
namespace {

// One op of the program: its 320 B record, its name and dependencies on the heap.
constexpr double kOpBytes = 450;
// The engine's state of one op on one GPU, allocated for every GPU of the simulation (its dependency count, step,
// times: 40 B).
constexpr double kInstanceBytes = 40;
// An op's span on a GPU where it runs: in the child's timeline, the parent's copy, and the metrics' intervals.
constexpr double kSpanBytes = 3 * 24.0;
// The platform: SimGrid's full zone keeps a routing table over every pair of its hosts (two per GPU), whatever is
// routed. Measured: predict collective over 1024, 2048 and 4096 ranks in closed form held 77, 242 and 869 MB, about
// 52 B per pair of GPUs (the table's pointers and what SimGrid keeps beside them) and a few KiB per GPU.
constexpr double kPlatformBytesPerGpuPair = 52;
constexpr double kPlatformBytesPerGpu = 4 * 1024.0;

double platform_bytes(int64_t gpus) {
  const auto n = static_cast<double>(gpus);
  return n * n * kPlatformBytesPerGpuPair + n * kPlatformBytesPerGpu;
}
// What an activity costs: SimGrid removes each finished activity from a list of those in flight, about one per
// simulated GPU, so its time grows with them. Measured on one core: a forward at tp 1024 (0.56 M activities) took
// 1.16 s and at tp 4096 (2.24 M) 14.9 s: 0.47 us + 1.5 ns per GPU.
constexpr double kActivitySeconds = 0.47e-6;
constexpr double kActivitySecondsPerGpu = 1.5e-9;
// A kernel's activities at most: its launch gate, its overhead, its work.
constexpr double kKernelActivities = 3;
// A collective's own (launch gate, call latency), and each flow's (step latency, transfer).
constexpr double kCollectiveActivities = 2;
constexpr double kFlowActivities = 2;

// The activities one GPU starts for collective `plan` (its flows spread evenly over its ranks).
double collective_activities(const CommPlan& plan) {
  const double flows_per_rank = static_cast<double>(stepped_flows(plan)) / std::max(1, plan.ranks);
  const double parts = plan.stripes_rails && plan.gpus_per_node > 0 ? plan.gpus_per_node : 1;
  return kCollectiveActivities + flows_per_rank * kFlowActivities * parts;
}

std::string count_text(double n) {
  return n < 1e6 ? model::format_number("%.0f", n) : model::format_number("%.3g", n);
}

}  // namespace

WorkEstimate estimate_program_memory(double ops, int64_t gpus) {
  WorkEstimate work;
  work.gpus = gpus;
  work.op_instances = ops * static_cast<double>(gpus);
  work.bytes = ops * kOpBytes + work.op_instances * (kInstanceBytes + kSpanBytes) + platform_bytes(gpus);
  return work;
}

WorkEstimate estimate_work(const model::LayerGraph& graph, const std::vector<CommPlan>& plans,
                           const EngineOptions& options) {
  const int replicas = options.data_group ? options.data_group->replicas : 1;
  const int stages = options.data_group ? options.data_group->stages : 1;
  const int64_t stage_gpus = static_cast<int64_t>(graph.tp()) * replicas;
  WorkEstimate work;
  work.gpus = stage_gpus * stages;
  for (model::OpId id = 0; id < graph.size(); ++id) {
    const model::Op& op = graph.op(id);
    int on_stages = 0;
    for (int stage = 0; stage < stages; ++stage) on_stages += model::runs_on_stage(op, stage) ? 1 : 0;
    const double gpus = static_cast<double>(stage_gpus) * on_stages;
    work.op_instances += gpus;
    work.activities += gpus * (model::is_communication(op.kind) ? collective_activities(plans[id]) : kKernelActivities);
  }
  work.seconds = work.activities * (kActivitySeconds + kActivitySecondsPerGpu * static_cast<double>(work.gpus));
  const auto ops = static_cast<double>(graph.size());
  // The platform spans the job's GPUs from the first simulated one to the last (the members' strides apart).
  const JobMembers* members = options.data_group ? &*options.data_group : nullptr;
  const int64_t platform_gpus = members ? static_cast<int64_t>(members->stages - 1) * members->stage_stride +
                                              static_cast<int64_t>(members->replicas - 1) * members->stride + graph.tp()
                                        : graph.tp();
  work.bytes = ops * kOpBytes + ops * static_cast<double>(work.gpus) * kInstanceBytes + work.op_instances * kSpanBytes +
               platform_bytes(platform_gpus);
  return work;
}

void refuse_unbounded_work(const WorkEstimate& work, const std::string& instead) {
  const bool too_long = work.seconds > model::kMaxSimulationSeconds;
  const bool too_large = work.bytes > model::kMaxSimulationBytes;
  if (!too_long && !too_large) return;
  std::string estimate;
  if (too_long) {
    estimate = count_text(work.activities) + " activities, about " + model::format_number("%.3g", work.seconds) +
               " s, past tpsim's limit of " + model::format_number("%.0f", model::kMaxSimulationSeconds) + " s";
  }
  if (too_large) {
    estimate += std::string(too_long ? ", and " : "") + "about " +
                model::format_number("%.3g", work.bytes / (1 << 30)) + " GiB of state, past tpsim's limit of " +
                model::format_number("%.3g", model::kMaxSimulationBytes / (1 << 30)) + " GiB";
  }
  throw InputError("this simulation would take " + estimate + " (" + std::to_string(work.gpus) + " GPUs simulated, " +
                   count_text(work.op_instances) + " op instances; docs/reliability.md); " + instead);
}

std::string smaller_alternative(const EngineOptions& options) {
  if (options.data_group) {
    return "run it without --no-symmetry: the symmetric run simulates one replica (under a pipeline, each stage's "
           "programs alone) and times what runs between them in closed form";
  }
  return "simulate fewer layers (workload.layers) or micro-batches, or a smaller group";
}

}  // namespace tpsim::sim
