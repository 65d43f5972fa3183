// The least time of a training step from its programs' bounds and, under a pipeline, the schedule's timing.
#include "sim/run/step_bound.hpp"

#include <algorithm>

#include "model/graph/graph_builder.hpp"
#include "model/pipeline/pipeline_spec.hpp"
#include "sim/cost/power_limit.hpp"
#include "sim/engine/pipeline_timing.hpp"
#include "sim/engine/program_bound.hpp"
#include "sim/engine/runner/window_clock.hpp"
#include "sim/run/pipeline_run.hpp"
#include "sim/run/scenario_run.hpp"

namespace tpsim::sim {
namespace {

// The least time of a window (a program, or a pipeline's step) whose GPUs do `clocked_s` of compute-bound work each on
// the mean, at `cost`'s clock, under a windowed profile (sim/engine/runner/window_clock.hpp): that work at the
// back-to-back clock r_b. Why: the window's compute-bound time C draws D(r) above idle at its clock r, so
// C D(r) <= (limit - idle) T, and C >= clocked / r; D(r_b) = limit - idle and D grows with r: for r <= r_b,
// T >= C >= clocked / r_b; above it, T >= C D(r) / (limit - idle) >= clocked / r_b. The engine's clock is within
// twice the fixed point's tolerance of the window's own, hence the margin. 0 without a window.
double least_windowed_seconds(double clocked_s, const CostModel& cost) {
  if (!windowed_power(cost.profile())) return 0.0;
  const double back_to_back =
      std::min(1.0, back_to_back_clock_ratio(cost.gpu(), cost.profile()) + 2 * kWindowClockTolerance);
  return clocked_s * cost.clock_ratio() / std::max(back_to_back, cost.clock_ratio());
}

std::vector<bool> forward_ops(const model::LayerGraph& graph) {
  std::vector<bool> forward(graph.size());
  for (model::OpId id = 0; id < graph.size(); ++id) forward[id] = graph.op(id).stage == model::OpStage::kForward;
  return forward;
}

std::vector<bool> ops_in(size_t size, std::pair<model::OpId, model::OpId> range) {
  std::vector<bool> in(size, false);
  for (model::OpId id = range.first; id < range.second; ++id) in[id] = true;
  return in;
}

// A chunk's pass costs no larger than pipeline_run's (its forward's end, its backward to the program's end; under a
// zero-bubble schedule the input gradient's and the weight gradient's passes), the rest zero; and its optimizer's.
struct ChunkBound {
  model::ChunkCosts costs;
  double optimizer_s = 0;
  double clocked_s = 0;            // one micro-batch's compute-bound work that follows the SM clock
  double optimizer_clocked_s = 0;  // the optimizer's
  double model_flops = 0;          // one micro-batch's passes (the run's metrics count m of them)
  double optimizer_flops = 0;      // the optimizer's, once a step
};

std::optional<ChunkBound> bound_chunk(const model::Scenario& s, const model::Variant& v, const model::ModelChunk& chunk,
                                      const CostModel& cost, const EngineOptions& options) {
  const int tp = s.parallelism.tp;
  const model::ChunkWorkloads workloads = model::chunk_workloads(s.workload, chunk);
  const model::LayerGraph graph =
      model::build_pass_graph(s.arch, workloads.microbatch, model::primary_pass(workloads.synchronised), tp, v);
  const std::optional<ProgramBound> plain = bound_program(graph, cost, options);
  if (!plain) return std::nullopt;
  ChunkBound c;
  c.model_flops = graph.model_flops();
  c.clocked_s = plain->clocked_s;
  const std::vector<bool> forward = forward_ops(graph);
  c.costs.forward_s = least_last_end(*plain, forward);
  const std::optional<double> backward = least_gap(graph, *plain, forward, {});
  if (!backward) return std::nullopt;
  c.costs.backward_s = *backward;
  if (model::splits_weight_gradient(s.pipeline.schedule)) {
    const model::PipelineProgram split = split_backward_program(graph, s.pipeline.schedule);
    const std::optional<ProgramBound> b = bound_program(split.graph, cost, options);
    if (!b) return std::nullopt;
    const size_t n = split.graph.size();
    const std::vector<std::pair<model::OpId, model::OpId>>& passes = split.passes[0];
    const std::optional<double> input_gradient = least_gap(split.graph, *b, ops_in(n, passes[0]), ops_in(n, passes[1]));
    const std::optional<double> weight_gradient = least_gap(split.graph, *b, ops_in(n, passes[1]), {});
    if (!input_gradient || !weight_gradient) return std::nullopt;
    c.costs.backward_s = *input_gradient + *weight_gradient;
    c.costs.weight_gradient_s = *weight_gradient;
  }
  if (workloads.step_end) {
    const model::Workload& end = *workloads.step_end;
    const model::LayerGraph step_end = model::build_pass_graph(s.arch, end, model::primary_pass(end), tp, v);
    const std::optional<ProgramBound> b = bound_program(step_end, cost, options);
    if (!b) return std::nullopt;
    c.optimizer_s = b->makespan_s;
    c.optimizer_clocked_s = b->clocked_s;
    c.optimizer_flops = step_end.model_flops();
  }
  return c;
}

std::optional<StepBound> bound_pipeline(const model::Scenario& s, const model::Variant& v, const CostModel& cost,
                                        const EngineOptions& options) {
  const model::PipelineScheduleKind kind = s.pipeline.schedule;
  if (kind == model::PipelineScheduleKind::kZeroBubbleV) return std::nullopt;
  const int p = s.parallelism.pp, m = static_cast<int>(s.workload.microbatches);
  const std::vector<model::ModelChunk> chunks = model::model_chunks(s.workload.layers, p, s.pipeline);
  std::vector<std::pair<model::ModelChunk, ChunkBound>> distinct;
  model::PipelineCosts costs;
  std::vector<double> optimizer_s;
  // Per GPU, the stages' mean as pipeline_run's metrics take it: every chunk's m micro-batches and its optimizer.
  double flops = 0, clocked_s = 0;
  for (const model::ModelChunk& chunk : chunks) {
    auto same = std::find_if(distinct.begin(), distinct.end(),
                             [&](const auto& d) { return model::same_program(s.arch, d.first, chunk); });
    if (same == distinct.end()) {
      const std::optional<ChunkBound> b = bound_chunk(s, v, chunk, cost, options);
      if (!b) return std::nullopt;
      same = distinct.insert(distinct.end(), {chunk, *b});
    }
    costs.chunk.push_back(same->second.costs);
    optimizer_s.push_back(same->second.optimizer_s);
    flops += (m * same->second.model_flops + same->second.optimizer_flops) / p;
    clocked_s += (m * same->second.clocked_s + same->second.optimizer_clocked_s) / p;
  }
  const model::PipelineSchedule schedule = model::make_pipeline_schedule(kind, p, m, s.pipeline.virtual_stages);
  const model::PipelineTiming timing = time_pipeline(schedule, costs);
  double step_s = timing.step_s;
  for (int stage = 0; stage < p && s.workload.optimizer; ++stage) {
    double end = timing.end_s[static_cast<size_t>(stage)];
    for (int virtual_stage = 0; virtual_stage < s.pipeline.virtual_stages; ++virtual_stage) {
      end += optimizer_s[static_cast<size_t>(model::model_chunk_of(kind, p, stage, virtual_stage))];
    }
    step_s = std::max(step_s, end);
  }
  return StepBound{std::max(step_s, least_windowed_seconds(clocked_s, cost)), flops};
}

std::optional<StepBound> bound_variant(const model::Scenario& s, const model::Variant& v, const CostModel& cost,
                                       const EngineOptions& options) {
  if (s.parallelism.pp > 1) return bound_pipeline(s, v, cost, options);
  const model::Workload& w = s.workload;
  const model::LayerGraph graph = model::build_pass_graph(s.arch, w, model::primary_pass(w), s.parallelism.tp, v);
  const std::optional<ProgramBound> b = bound_program(graph, cost, options);
  if (!b) return std::nullopt;
  return StepBound{std::max(b->makespan_s, least_windowed_seconds(b->clocked_s, cost)), graph.model_flops()};
}

}  // namespace

std::optional<StepBound> step_lower_bound(const model::Scenario& scenario) {
  if (scenario.workload.phase != model::Phase::kTrain || scenario.variants.empty()) return std::nullopt;
  const ScenarioRun run = prepare_run(scenario);
  const CostModel cost = group_cost_model(run);
  const EngineOptions options = launch_options(run.profile, run.scenario.workload.cuda_graphs);
  const model::Variant& variant = run.scenario.variants.front();
  if (!variant.chunks_auto) return bound_variant(run.scenario, variant, cost, options);
  // The fastest chunk count is run: the least of their bounds (their model FLOPs are the same: chunks split GEMMs).
  std::optional<StepBound> least;
  for (const int chunks : chunk_candidates(run.scenario)) {
    model::Variant candidate = variant;
    candidate.chunks = chunks;
    candidate.chunks_auto = false;
    const std::optional<StepBound> b = bound_variant(run.scenario, candidate, cost, options);
    if (!b) return std::nullopt;
    if (!least || b->step_s < least->step_s) least = b;
  }
  return least;
}

}  // namespace tpsim::sim
