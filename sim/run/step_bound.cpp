// The least time of a training step from its programs' bounds and, under a pipeline, the schedule's timing.
#include "sim/run/step_bound.hpp"

#include <algorithm>
#include <utility>

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

// A step's bound at one clock: the least time its programs' paths and the schedule allow, and on the mean per GPU what
// the limiter's window holds: compute-bound work and the energy of the rest (sim/engine/runner/window_clock.hpp).
struct ClockedBound {
  double path_s = 0;       // the least step at the cost's clock
  double clocked_s = 0;    // per GPU: the compute-bound work that follows the SM clock, in seconds at the cost's clock
  double other_J = 0;      // per GPU: what the rest draws above idle at any clock (ProgramBound::other_J)
  double model_flops = 0;  // the step's model FLOPs per GPU
};

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

// A distinct chunk's programs, built once for every clock its bounds are taken at: its micro-batch's (forward, then
// backward), under a zero-bubble schedule the same split into its passes, and its step end's (the optimizer).
struct ChunkPrograms {
  model::ModelChunk chunk;
  model::LayerGraph graph{1};
  std::optional<model::PipelineProgram> split;
  std::optional<model::LayerGraph> step_end;
};

// The programs a step's bound reads: the step's own without a pipeline, else each distinct chunk's and which each
// chunk is.
struct StepPrograms {
  std::optional<model::LayerGraph> step;
  std::vector<ChunkPrograms> distinct;
  std::vector<size_t> of_chunk;
};

ChunkPrograms build_chunk(const model::Scenario& s, const model::Variant& v, const model::ModelChunk& chunk) {
  const int tp = s.parallelism.tp;
  const model::ChunkWorkloads workloads = model::chunk_workloads(s.workload, chunk);
  ChunkPrograms c{
      chunk, model::build_pass_graph(s.arch, workloads.microbatch, model::primary_pass(workloads.synchronised), tp, v),
      std::nullopt, std::nullopt};
  if (model::splits_weight_gradient(s.pipeline.schedule))
    c.split = split_backward_program(c.graph, s.pipeline.schedule);
  if (workloads.step_end) {
    const model::Workload& end = *workloads.step_end;
    c.step_end = model::build_pass_graph(s.arch, end, model::primary_pass(end), tp, v);
  }
  return c;
}

StepPrograms build_step_programs(const model::Scenario& s, const model::Variant& v) {
  StepPrograms programs;
  if (s.parallelism.pp == 1) {
    const model::Workload& w = s.workload;
    programs.step = model::build_pass_graph(s.arch, w, model::primary_pass(w), s.parallelism.tp, v);
    return programs;
  }
  for (const model::ModelChunk& chunk : model::model_chunks(s.workload.layers, s.parallelism.pp, s.pipeline)) {
    const auto same = std::find_if(programs.distinct.begin(), programs.distinct.end(),
                                   [&](const ChunkPrograms& d) { return model::same_program(s.arch, d.chunk, chunk); });
    programs.of_chunk.push_back(static_cast<size_t>(same - programs.distinct.begin()));
    if (same == programs.distinct.end()) programs.distinct.push_back(build_chunk(s, v, chunk));
  }
  return programs;
}

// A chunk's pass costs no larger than pipeline_run's (its forward's end, its backward to the program's end; under a
// zero-bubble schedule the input gradient's and the weight gradient's passes), the rest zero; and its optimizer's.
struct ChunkBound {
  model::ChunkCosts costs;
  double optimizer_s = 0;
  double clocked_s = 0;            // one micro-batch's compute-bound work that follows the SM clock
  double optimizer_clocked_s = 0;  // the optimizer's
  double other_J = 0;              // one micro-batch's energy beside compute (ProgramBound::other_J)
  double optimizer_other_J = 0;    // the optimizer's
  double model_flops = 0;          // one micro-batch's passes (the run's metrics count m of them)
  double optimizer_flops = 0;      // the optimizer's, once a step
};

std::optional<ChunkBound> bound_chunk(const ChunkPrograms& programs, const CostModel& cost,
                                      const EngineOptions& options) {
  const model::LayerGraph& graph = programs.graph;
  const std::optional<ProgramBound> plain = bound_program(graph, cost, options);
  if (!plain) return std::nullopt;
  ChunkBound c;
  c.model_flops = graph.model_flops();
  c.clocked_s = plain->clocked_s;
  c.other_J = plain->other_J;
  const std::vector<bool> forward = forward_ops(graph);
  c.costs.forward_s = least_last_end(*plain, forward);
  const std::optional<double> backward = least_gap(graph, *plain, forward, {});
  if (!backward) return std::nullopt;
  c.costs.backward_s = *backward;
  if (programs.split) {
    const model::PipelineProgram& split = *programs.split;
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
  if (programs.step_end) {
    const std::optional<ProgramBound> b = bound_program(*programs.step_end, cost, options);
    if (!b) return std::nullopt;
    c.optimizer_s = b->makespan_s;
    c.optimizer_clocked_s = b->clocked_s;
    c.optimizer_other_J = b->other_J;
    c.optimizer_flops = programs.step_end->model_flops();
  }
  return c;
}

std::optional<ClockedBound> bound_pipeline(const model::Scenario& s, const StepPrograms& programs,
                                           const CostModel& cost, const EngineOptions& options) {
  const model::PipelineScheduleKind kind = s.pipeline.schedule;
  if (kind == model::PipelineScheduleKind::kZeroBubbleV) return std::nullopt;
  const int p = s.parallelism.pp, m = static_cast<int>(s.workload.microbatches);
  std::vector<ChunkBound> distinct;
  for (const ChunkPrograms& chunk : programs.distinct) {
    const std::optional<ChunkBound> b = bound_chunk(chunk, cost, options);
    if (!b) return std::nullopt;
    distinct.push_back(*b);
  }
  model::PipelineCosts costs;
  std::vector<double> optimizer_s;
  // Per GPU, the stages' mean as pipeline_run's metrics take it: every chunk's m micro-batches and its optimizer.
  ClockedBound bound;
  for (const size_t i : programs.of_chunk) {
    const ChunkBound& c = distinct[i];
    costs.chunk.push_back(c.costs);
    optimizer_s.push_back(c.optimizer_s);
    bound.model_flops += (m * c.model_flops + c.optimizer_flops) / p;
    bound.clocked_s += (m * c.clocked_s + c.optimizer_clocked_s) / p;
    bound.other_J += (m * c.other_J + c.optimizer_other_J) / p;
  }
  const model::PipelineSchedule schedule = model::make_pipeline_schedule(kind, p, m, s.pipeline.virtual_stages);
  const model::PipelineTiming timing = time_pipeline(schedule, costs);
  bound.path_s = timing.step_s;
  for (int stage = 0; stage < p && s.workload.optimizer; ++stage) {
    double end = timing.end_s[static_cast<size_t>(stage)];
    for (int virtual_stage = 0; virtual_stage < s.pipeline.virtual_stages; ++virtual_stage) {
      end += optimizer_s[static_cast<size_t>(model::model_chunk_of(kind, p, stage, virtual_stage))];
    }
    bound.path_s = std::max(bound.path_s, end);
  }
  return bound;
}

std::optional<ClockedBound> bound_at_clock(const model::Scenario& s, const StepPrograms& programs,
                                           const CostModel& cost, const EngineOptions& options) {
  if (!programs.step) return bound_pipeline(s, programs, cost, options);
  const std::optional<ProgramBound> b = bound_program(*programs.step, cost, options);
  if (!b) return std::nullopt;
  return ClockedBound{b->makespan_s, b->clocked_s, b->other_J, programs.step->model_flops()};
}

// The least window (a program, or a pipeline's busy time per GPU) a run at engine clock r can have, from `at`'s work
// (at clock 1: work_s) and energy beside it. Why: the run's window T holds compute-bound time C >= work / r and the
// energy E >= other_J; its own clock r' (window_clock_ratio of its draw) is within kWindowClockTolerance of r, and
// the energy above the limit, excess(x) = (idle - limit) S(x) + C (r / x) D(x) + E with S(x) = T + C (r / x - 1), grows
// with x and is 0 at r' (or below, at r' = 1). At x = r - tolerance <= r': (limit - idle) S(x) >= C (r / x) D(x) + E;
// with C <= T, S(x) <= T r / x, so T >= (work D(x) + E x) / ((limit - idle) r). 0 where x is at or below
// kMinClockRatio (the limiter may leave the draw above the limit there).
double least_window_s(double work_s, double other_J, const CostModel& cost, double r) {
  const PowerParams& power = *cost.profile().power;
  const double own = r - kWindowClockTolerance;
  if (own <= kMinClockRatio) return 0.0;
  const double headroom_W = binding_limit_W(cost.gpu(), power) - power.idle_W;
  return (work_s * compute_dynamic_W(power, own) + other_J * own) / (headroom_W * r);
}

// For `falling` non-increasing and `rising` non-decreasing on [low, 1]: a clock r in it and a value at most
// max(falling(x), rising(x)) for every x in it, found by bisection: r brackets their crossing from below (falling(r)
// >= rising(r) unless the crossing is below low), the value max(falling(above), rising(r)) with `above` the bracket's
// top (every x <= r has falling(x) >= falling(r) >= rising(r), every x >= above has rising(x) >= rising(above) >
// falling(above)).
template <class Falling, class Rising>
std::pair<double, double> least_of_larger(Falling falling, Rising rising, double low) {
  if (falling(low) < rising(low)) return {low, rising(low)};
  if (falling(1.0) >= rising(1.0)) return {1.0, falling(1.0)};
  double below = low, above = 1.0;
  // 50 halvings bracket the crossing within 1e-15 of a clock: below a double's resolution of the times compared.
  constexpr int kBisections = 50;
  for (int i = 0; i < kBisections; ++i) {
    const double mid = 0.5 * (below + above);
    (falling(mid) >= rising(mid) ? below : above) = mid;
  }
  return {below, std::max(falling(above), rising(below))};
}

// The least step of `v` at any clock the limiter's window can give (`cost`'s clock without a window). The step is at
// least its path at the engine's clock r and its window's least at r (least_window_s). The work alone bounds the
// window's clock from below near r_c, where work / r meets the least window; below r_c the path is at least its
// value at r_c; above it the path at r is at least its value at r_c times r_c / r (every op lasts a + b / r with a,
// b >= 0, so every chain's length scales with 1 / r at most); and never less than at the cost's clock (1).
std::optional<StepBound> bound_variant(const model::Scenario& s, const model::Variant& v, const CostModel& cost,
                                       const EngineOptions& options) {
  if (s.parallelism.pp > 1 && s.pipeline.schedule == model::PipelineScheduleKind::kZeroBubbleV) return std::nullopt;
  const StepPrograms programs = build_step_programs(s, v);
  const std::optional<ClockedBound> at_cost = bound_at_clock(s, programs, cost, options);
  if (!at_cost) return std::nullopt;
  if (!windowed_power(cost.profile())) return StepBound{at_cost->path_s, at_cost->model_flops};
  const double work_s = at_cost->clocked_s * cost.clock_ratio();
  const auto window = [&](double r) { return least_window_s(work_s, at_cost->other_J, cost, r); };
  const double r_c = least_of_larger([&](double r) { return work_s / r; }, window, kMinClockRatio).first;
  const std::optional<ClockedBound> at_low = bound_at_clock(s, programs, cost.at_clock(r_c), options);
  if (!at_low) return std::nullopt;
  const double above = least_of_larger([&](double r) { return at_low->path_s * r_c / r; }, window, r_c).second;
  return StepBound{std::max(at_cost->path_s, std::min(at_low->path_s, above)), at_cost->model_flops};
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
