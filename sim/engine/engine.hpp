// Plays a rank-symmetric layer graph on a SimGrid platform: one instance of every op per GPU, each
// started as a SimGrid activity only when its dependencies (including its stream predecessor) are met.
// Kernels are execs on the GPU host; communication ops are sequences of point-to-point steps whose
// flows meet at a rendezvous of both ranks and share NVLink ports; SM-driven comm kernels lower the
// GPU's power state so a concurrent GEMM slows by the SM share they take. With --no-symmetry it plays every
// data-parallel replica of the TP group at once, the data group's collectives as steps between them, and a pipelined
// step's stages at once, each op on its stage's GPUs.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "model/graph/layer_graph.hpp"
#include "model/parallel/rank_skew.hpp"
#include "sim/cost/cost_model.hpp"
#include "sim/engine/comm_plan.hpp"
#include "sim/engine/platform.hpp"
#include "sim/engine/program_plans.hpp"
#include "sim/engine/timeline.hpp"

namespace tpsim::sim {

// `--no-symmetry`: the whole data group simulated instead of one member and its collectives' closed form, and under
// a pipeline simulated whole (model/pipeline/pipeline_program.hpp) every stage too. `replicas` copies of the TP group
// in each of `stages` stages: rank r of replica k in stage s on GPU s·stage_stride + k·stride + r of `fabric` (the
// job's); each data-group collective runs as its plan's point-to-point steps between the replicas of its stage holding
// the same TP rank, each send between stages (CommGroup::kPipeline) between the two stages' GPUs of one replica and
// rank.
struct JobMembers {
  int replicas = 1;
  int stride = 1;
  Fabric fabric;
  int stages = 1;
  int stage_stride = 0;
};

struct EngineOptions {
  double host_launch_s = 0;      // host time per launched op (0: CUDA graphs, or launches always ahead)
  double stream_wait_s = 0;      // host time per wait on another stream's op (cudaStreamWaitEvent)
  double collective_host_s = 0;  // host time per NCCL call beyond host_launch_s (the framework's own)
  // GPU time from an op's end to the start of an op on another stream of its GPU that waits for it.
  double gpu_wait_s = 0;
  // Seeded variability of kernel durations (model/parallel/rank_skew.hpp); off unless a scenario asks for it.
  model::RankSkew skew;
  // Set: every member of the data group simulated (--no-symmetry); unset: one, its collectives in closed form.
  std::optional<JobMembers> data_group;
  // True: simulate() finds the program's clock under the power limiter's window (sim/engine/runner/window_clock.hpp);
  // false: it runs once at the cost model's clock, a caller holding the window (a pipeline's step).
  bool window_clock = true;
};

// Eager launches cost the profile's launch.host_us per op, launch.stream_wait_us per cross-stream
// wait and launch.collective_host_us more per NCCL call; a CUDA graph replays without them. Both pay launch.gpu_wait_us
// per cross-stream dependency on the GPU (a graph's edge between branches is such a wait too).
inline EngineOptions launch_options(const CostProfile& profile, bool cuda_graphs) {
  EngineOptions options;
  options.gpu_wait_s = profile.gpu_wait_s;
  if (!cuda_graphs) {
    options.host_launch_s = profile.host_launch_s;
    options.stream_wait_s = profile.stream_wait_s;
    options.collective_host_s = profile.collective_host_s;
  }
  return options;
}

// Options with these launch costs and no skew (tests and tools that set the costs directly).
inline EngineOptions launch_costs(double host_launch_s, double stream_wait_s = 0, double gpu_wait_s = 0) {
  EngineOptions options;
  options.host_launch_s = host_launch_s;
  options.stream_wait_s = stream_wait_s;
  options.gpu_wait_s = gpu_wait_s;
  return options;
}

// Runs the graph to completion inside a fresh SimGrid engine (one per process: see isolated_run.hpp),
// with `plans` from plan_program (made here when null); the timeline holds them, and a span per op and GPU
// simulated (tp of them, or tp x replicas x stages with options.data_group: GPU k·tp + r is rank r of member k, the
// replica k % replicas of stage k / replicas; an op runs only on its stage's GPUs: model::runs_on_stage).
// Throws std::logic_error if some op can never start (a deadlocked program).
Timeline simulate_in_this_process(const model::LayerGraph& graph, const CostModel& cost,
                                  const EngineOptions& options = {},
                                  std::shared_ptr<const std::vector<CommPlan>> plans = nullptr);

}  // namespace tpsim::sim
