// Simulates each distinct chunk program of a pipeline once, costs the sends between stages, times the schedule.
#include "sim/run/pipeline_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "model/graph/graph_builder.hpp"
#include "model/layers/fp8_recipe.hpp"
#include "model/memory/parameter_count.hpp"
#include "model/memory/pipeline_memory.hpp"
#include "model/pipeline/pipeline_program.hpp"
#include "model/train/train_step.hpp"
#include "sim/cost/collective_time.hpp"
#include "sim/engine/data_group.hpp"
#include "sim/engine/isolated_run.hpp"
#include "sim/engine/pipeline_timing.hpp"
#include "sim/engine/runner/window_clock.hpp"
#include "sim/engine/work_estimate.hpp"

namespace tpsim::sim {
namespace {

// One distinct chunk program: one micro-batch's passes, and the chunk's optimizer alone.
struct ChunkSim {
  model::ModelChunk chunk;
  model::ChunkCosts costs;
  Metrics passes;                  // one micro-batch, forward and backward
  Metrics optimizer;               // clipping and AdamW over the chunk's parameters
  double optimizer_norm_s = 0;     // of optimizer.time_s: the local gradient norm and its reductions before clipping
  Metrics synced;                  // data parallelism: the micro-batch that gathers and reduces over the replicas
  std::optional<PassTrace> trace;  // set once simulated
  std::optional<PassTrace> synced_trace;
  // What each program draws over the power limiter's window (sim/engine/runner/window_clock.hpp), per GPU of those it
  // simulated: one micro-batch, the synchronised one, the step's end.
  WindowDraw plain_draw, synced_draw, optimizer_draw;
};

std::string chunk_label(const model::ModelChunk& chunk) {
  std::string label = "chunk of " + std::to_string(chunk.layers) + " layers";
  if (chunk.embedding) label += " + embedding";
  if (chunk.head) label += " + head and loss";
  return label;
}

// A program's draw per GPU it simulated (a TP group, or under --no-symmetry every replica's).
WindowDraw per_gpu(const WindowDraw& draw, int ranks) {
  const double n = std::max(1, ranks);
  return WindowDraw{draw.span_s / n, draw.compute_s / n, draw.other_J / n};
}

// When a one-micro-batch program's forward ends (its backward runs from there to the makespan).
double forward_end(const model::LayerGraph& graph, const Timeline& timeline) {
  double end = 0;
  for (const OpSpan& span : timeline.spans) {
    if (graph.op(span.op).stage == model::OpStage::kForward) end = std::max(end, span.end_s);
  }
  return end;
}

}  // namespace

model::PipelineProgram split_backward_program(const model::LayerGraph& graph, model::PipelineScheduleKind kind) {
  model::PipelineSchedule one{kind, 1, 1, 1, {{}}};
  std::vector<std::vector<model::PipelineSpan>> order(1);
  for (const model::PipelinePass pass :
       {model::PipelinePass::kForward, model::PipelinePass::kBackward, model::PipelinePass::kWeightGradient}) {
    one.steps[0].push_back(model::PipelineStep{pass, 0, 0});
    order[0].push_back(model::PipelineSpan{one.steps[0].back(), static_cast<double>(order[0].size()), 0.0});
  }
  return model::build_pipeline_program(one, {&graph}, order, 0.0, 0);
}

namespace {

// Under a zero-bubble schedule: the backward as the schedule runs it, the input gradient first and the weight gradient
// as a pass of its own after it (model/pipeline/pipeline_program.hpp, on one stage). The input gradient's pass runs
// without the weight-gradient GEMMs that hid its communication, so it is longer than the backward less those GEMMs'
// time.
void split_backward(const model::LayerGraph& graph, model::PipelineScheduleKind kind, const CostModel& cost,
                    const EngineOptions& options, model::ChunkCosts& costs) {
  const model::PipelineProgram program = split_backward_program(graph, kind);
  const Timeline timeline = simulate(program.graph, cost, options);
  std::vector<double> end(3, 0.0);  // per pass: its last op's end
  for (const OpSpan& span : timeline.spans) {
    for (size_t pass = 0; pass < end.size(); ++pass) {
      const auto [begin, stop] = program.passes[0][pass];
      if (span.op >= begin && span.op < stop) end[pass] = std::max(end[pass], span.end_s);
    }
  }
  costs.backward_s = timeline.makespan_s - end[0];
  costs.weight_gradient_s = timeline.makespan_s - end[1];
}

ChunkSim simulate_chunk(const model::Scenario& s, const model::Variant& v, const model::ModelChunk& chunk,
                        const CostModel& cost, const EngineOptions& options) {
  const int tp = s.parallelism.tp;
  const model::ChunkWorkloads workloads = model::chunk_workloads(s.workload, chunk);
  const model::Workload& w = workloads.synchronised;
  // The micro-batches between the step's first and last run without the replicas' synchronisation.
  const model::Workload& plain = workloads.microbatch;
  ChunkSim c;
  c.chunk = chunk;
  model::LayerGraph graph = model::build_pass_graph(s.arch, plain, model::primary_pass(w), tp, v);
  Timeline timeline = simulate(graph, cost, options);
  for (const OpSpan& span : timeline.spans) {
    const model::Op& op = graph.op(span.op);
    // The weight-gradient GEMMs a zero-bubble schedule would run as their own pass (GPU 0's; all run alike).
    if (span.rank == 0 && op.kind == model::OpKind::kGemm && op.stage == model::OpStage::kBackward &&
        model::gemm_role_of(op.name) == model::GemmRole::kWeightGradient) {
      c.costs.weight_gradient_s += span.end_s - span.start_s;
    }
  }
  c.plain_draw = per_gpu(window_draw(graph, cost, timeline), timeline.ranks);
  c.costs.forward_s = forward_end(graph, timeline);
  c.costs.backward_s = timeline.makespan_s - c.costs.forward_s;
  const double unsplit_backward = c.costs.backward_s;
  if (model::splits_weight_gradient(s.pipeline.schedule))
    split_backward(graph, s.pipeline.schedule, cost, options, c.costs);
  c.passes = compute_metrics(graph, timeline);
  c.trace.emplace(PassTrace{chunk_label(chunk), std::move(graph), std::move(timeline)});
  if (w.data_parallel.enabled()) {
    // The same micro-batch with the step's synchronisation (FSDP's gathers before its forward, the gradients'
    // reduction after its backward): its forward is the step's first one's, its backward the last one's.
    const model::LayerGraph synced = model::build_pass_graph(s.arch, w, model::primary_pass(w), tp, v);
    Timeline synced_timeline = simulate(synced, cost, options);
    c.synced_draw = per_gpu(window_draw(synced, cost, synced_timeline), synced_timeline.ranks);
    const double synced_forward = forward_end(synced, synced_timeline);
    c.costs.gathered_forward_s = synced_forward;
    // The backward's work ends with its last op but the reduction's.
    double backward_end = synced_forward;
    for (const OpSpan& span : synced_timeline.spans) {
      const model::Op& op = synced.op(span.op);
      if (op.stage != model::OpStage::kForward && op.group != model::CommGroup::kData) {
        backward_end = std::max(backward_end, span.end_s);
      }
    }
    c.costs.synced_backward_extra_s = std::max(0.0, backward_end - synced_forward - unsplit_backward);
    c.costs.reduce_tail_s = std::max(0.0, synced_timeline.makespan_s - backward_end);
    c.synced = compute_metrics(synced, synced_timeline);
    c.synced_trace.emplace(
        PassTrace{chunk_label(chunk) + ", synchronised over the replicas", synced, std::move(synced_timeline)});
  }
  if (workloads.step_end) {
    // No micro-batch, only the step's end: the chunk's clipping and AdamW.
    const model::Workload& end = *workloads.step_end;
    const model::LayerGraph step_end = model::build_pass_graph(s.arch, end, model::primary_pass(end), tp, v);
    const Timeline timeline = simulate(step_end, cost, options);
    c.optimizer_draw = per_gpu(window_draw(step_end, cost, timeline), timeline.ranks);
    c.optimizer = compute_metrics(step_end, timeline);
    c.optimizer_norm_s = c.optimizer.time_s;
    for (const OpSpan& span : timeline.spans) {
      if (step_end.op(span.op).name == model::kClipOpName)
        c.optimizer_norm_s = std::min(c.optimizer_norm_s, span.start_s);
    }
  }
  return c;
}

// An NCCL send/recv of `bytes` from each GPU of one stage to its peer in the next: over NVLink inside a node,
// over the GPU's NIC across nodes (the network section's step).
double send_seconds(const CostProfile& profile, const Fabric& job, bool across_nodes, double bytes) {
  if (across_nodes) return profile.nccl_call_latency_s + step_seconds(*profile.network, bytes, job.nic_Bps);
  return profile.nccl_call_latency_s + step_seconds(profile.nccl, bytes, job.port_Bps);
}

// A collective of `bytes` over `members` GPUs `stride` apart on the job (the GPUs of one TP rank in each pipeline
// stage), alone on an idle fabric as NCCL runs it.
double stage_group_seconds(const CostModel& cost, model::CollectiveKind kind, double bytes, int members, int stride) {
  model::Op op;
  op.kind = model::OpKind::kCollective;
  op.collective = kind;
  op.tensor_bytes = bytes;
  op.group = model::CommGroup::kData;
  op.group_size = members;
  op.group_stride = stride;
  return data_group_idle_seconds(op, cost);
}

// Each stage's end with the optimizer: its passes and gradient reductions, its local norm, then (once the
// stages' norms are summed) its clipping and AdamW; with tied embeddings on two stages, their gradients summed
// before those two stages' norms.
void end_stages(const model::Scenario& s, const CostModel& cost, std::vector<double> ready, int chunks,
                PipelineRun& run) {
  const int p = s.parallelism.pp, stride = s.parallelism.pp_stride();
  const model::PipelineScheduleKind kind = s.pipeline.schedule;
  const int first = model::stage_of_chunk(kind, p, 0), last = model::stage_of_chunk(kind, p, chunks - 1);
  if (s.arch.tied_embeddings && first != last) {
    const double bytes =
        model::tied_embedding_gradient_bytes(s.arch, s.parallelism.tp, s.workload.data_parallel.shards());
    run.tied_embedding_sync_s =
        stage_group_seconds(cost, model::CollectiveKind::kAllReduce, bytes, 2, std::abs(last - first) * stride);
    const double both = std::max(ready[first], ready[last]) + run.tied_embedding_sync_s;
    ready[first] = ready[last] = both;
  }
  run.grad_norm_sync_s = stage_group_seconds(cost, model::CollectiveKind::kAllReduce, sizeof(float), p, stride);
  double norms = 0;
  for (int stage = 0; stage < p; ++stage) norms = std::max(norms, ready[stage] + run.stages[stage].norm_s);
  for (StageRun& r : run.stages) r.end_s = norms + run.grad_norm_sync_s + (r.optimizer_s - r.norm_s);
}

// --no-symmetry: the step simulated whole (model/pipeline/pipeline_program.hpp), every stage and replica at once on the
// job's fabric, the sends as flows beside the data group's traffic: the schedule's timing as that simulation gives it.
// Per stage: its passes' spans (their ops but the data group's collectives), their sum, and when its last op (its last
// pass, or its gradients' reduction) ended.
model::PipelineTiming simulate_whole(const model::Scenario& s, const model::PipelineSchedule& schedule,
                                     const model::PipelineTiming& timing,
                                     const std::vector<const model::LayerGraph*>& programs, double send_bytes,
                                     const CostModel& cost, EngineOptions options) {
  const int p = s.parallelism.pp;
  const model::PipelineProgram program =
      model::build_pipeline_program(schedule, programs, timing.spans, send_bytes, s.parallelism.pp_stride());
  options.data_group->stages = p;
  options.data_group->stage_stride = s.parallelism.pp_stride();
  const Timeline timeline = simulate(program.graph, cost, options);
  const size_t ops = program.graph.size();
  std::vector<double> first(ops, timeline.makespan_s), last(ops, 0.0);
  model::PipelineTiming w;
  w.end_s.assign(static_cast<size_t>(p), 0.0);
  for (const OpSpan& span : timeline.spans) {
    first[span.op] = std::min(first[span.op], span.start_s);
    last[span.op] = std::max(last[span.op], span.end_s);
    const int stage = program.graph.op(span.op).pipeline_stage;
    w.end_s[static_cast<size_t>(stage)] = std::max(w.end_s[static_cast<size_t>(stage)], span.end_s);
  }
  w.spans.resize(static_cast<size_t>(p));
  w.busy_s.assign(static_cast<size_t>(p), 0.0);
  for (int stage = 0; stage < p; ++stage) {
    for (size_t i = 0; i < schedule.steps[stage].size(); ++i) {
      const auto [begin, end] = program.passes[stage][i];
      model::PipelineSpan span{schedule.steps[stage][i], timeline.makespan_s, 0.0};
      for (model::OpId id = begin; id < end; ++id) {
        if (program.graph.op(id).group == model::CommGroup::kData) continue;  // the replicas' sync: not the pass's work
        span.start_s = std::min(span.start_s, first[id]);
        span.end_s = std::max(span.end_s, last[id]);
      }
      w.busy_s[stage] += span.end_s - span.start_s;
      w.step_s = std::max(w.step_s, span.end_s);
      w.spans[stage].push_back(span);
    }
  }
  w.bubble_fraction = model::bubble_fraction(w.busy_s, w.step_s);
  return w;
}

// Each model chunk's program for one micro-batch: the one synchronised over the replicas where there is one (the
// whole step takes its first forward and last backward from it).
std::vector<const model::LayerGraph*> chunk_programs(const std::vector<ChunkSim>& sims,
                                                     const std::vector<size_t>& sim_of) {
  std::vector<const model::LayerGraph*> programs;
  for (const size_t i : sim_of) {
    programs.push_back(sims[i].synced_trace ? &sims[i].synced_trace->graph : &sims[i].trace->graph);
  }
  return programs;
}

// The seconds of `stage`'s gradient reductions that its chunk programs' metrics count as exposed but the step hides:
// each chunk's reduction tail (reduce_tail_s, alone after its last backward in the synchronised program) runs in the
// step from the end of the chunk's last gradient pass, beside the stage's later passes (another chunk's, under
// interleaved and zero-bubble schedules) and beside the other chunks' tails.
double hidden_reduce_tails(const model::PipelineSchedule& schedule, const model::PipelineTiming& timing,
                           const model::PipelineCosts& costs, int stage) {
  const model::PipelinePass last_gradient = model::splits_weight_gradient(schedule.kind)
                                                ? model::PipelinePass::kWeightGradient
                                                : model::PipelinePass::kBackward;
  std::vector<std::pair<double, double>> tails, passes;
  for (const model::PipelineSpan& span : timing.spans[static_cast<size_t>(stage)]) {
    passes.emplace_back(span.start_s, span.end_s);
    if (span.step.pass != last_gradient || span.step.microbatch + 1 != schedule.microbatches) continue;
    const int chunk = model::model_chunk_of(schedule.kind, schedule.stages, stage, span.step.virtual_stage);
    tails.emplace_back(span.end_s, span.end_s + costs.chunk[static_cast<size_t>(chunk)].reduce_tail_s);
  }
  return overlapped_length(std::move(tails), std::move(passes));
}

// --no-symmetry: the whole step's program holds every pass of every stage, each chunk's program once per micro-batch,
// on every GPU of the job; refused before anything is simulated when it could not be held.
void refuse_unbounded_whole_step(const model::Scenario& s, const model::Variant& v,
                                 const std::vector<model::ModelChunk>& chunks, const EngineOptions& options) {
  double ops = 0;
  for (const model::ModelChunk& chunk : chunks) {
    const model::Workload w = model::chunk_workload(s.workload, chunk);
    ops += static_cast<double>(model::build_pass_graph(s.arch, w, model::primary_pass(w), s.parallelism.tp, v).size());
  }
  ops *= static_cast<double>(s.workload.microbatches);
  const int64_t gpus = static_cast<int64_t>(s.parallelism.tp) * s.parallelism.replicas() * s.parallelism.pp;
  refuse_unbounded_work(estimate_program_memory(ops, gpus), smaller_alternative(options));
}

// Each distinct chunk program simulated once: stages whose chunks run the same program share one simulation.
// sim_of: per model chunk, its program's index in the result.
std::vector<ChunkSim> simulate_distinct_chunks(const model::Scenario& s, const model::Variant& variant,
                                               const std::vector<model::ModelChunk>& chunks, const CostModel& cost,
                                               const EngineOptions& options, std::vector<size_t>& sim_of) {
  std::vector<ChunkSim> sims;
  for (const model::ModelChunk& chunk : chunks) {
    const auto same = std::find_if(sims.begin(), sims.end(),
                                   [&](const ChunkSim& c) { return model::same_program(s.arch, c.chunk, chunk); });
    const auto index = static_cast<size_t>(same - sims.begin());
    if (index == sims.size()) sims.push_back(simulate_chunk(s, variant, chunk, cost, options));
    sim_of.push_back(index);
  }
  return sims;
}

// The send between each model chunk and the next: its seconds into costs.hop_s and run.hop_s, whether it crosses
// nodes into run.hop_crosses_nodes.
void cost_stage_sends(const model::Scenario& s, const CostModel& cost, const Fabric& job, size_t chunks,
                      PipelineRun& run, model::PipelineCosts& costs) {
  const int p = s.parallelism.pp, tp = s.parallelism.tp;
  const model::PipelineScheduleKind kind = s.pipeline.schedule;
  for (size_t c = 0; c + 1 < chunks; ++c) {
    // Stage a's GPU i sends to stage b's GPU i (stage s of replica 0 holds GPUs s·stride to s·stride + tp - 1,
    // stride tp·dp or tp as parallelism.order places the stages); nothing moves between two chunks of one stage
    // (the bottom of zb-v's V).
    const int a = model::stage_of_chunk(kind, p, static_cast<int>(c));
    const int b = model::stage_of_chunk(kind, p, static_cast<int>(c + 1));
    const int stride = s.parallelism.pp_stride();
    const bool across = job.node_of(a * stride) != job.node_of(b * stride) || job.spans_nodes(tp);
    run.hop_crosses_nodes.push_back(a != b && across);
    costs.hop_s.push_back(a == b ? 0.0 : send_seconds(cost.profile(), job, across, run.activation_bytes));
  }
  run.hop_s = costs.hop_s;
}

// Each stage's model chunks by virtual stage.
std::vector<std::vector<size_t>> chunks_by_stage(model::PipelineScheduleKind kind, int stages, int virtual_stages) {
  std::vector<std::vector<size_t>> stage_chunks(static_cast<size_t>(stages));
  for (int stage = 0; stage < stages; ++stage) {
    for (int virtual_stage = 0; virtual_stage < virtual_stages; ++virtual_stage) {
      stage_chunks[static_cast<size_t>(stage)].push_back(
          static_cast<size_t>(model::model_chunk_of(kind, stages, stage, virtual_stage)));
    }
  }
  return stage_chunks;
}

// Where each distinct chunk's traces will sit in PipelineVariantRun::passes (its plain program, then its
// synchronised one).
std::vector<size_t> trace_positions(const std::vector<ChunkSim>& sims) {
  std::vector<size_t> trace_index;
  for (size_t i = 0, next = 0; i < sims.size(); ++i) {
    trace_index.push_back(next);
    next += sims[i].synced_trace ? 2 : 1;
  }
  return trace_index;
}

// One model chunk of a stage: its costs into the stage's run r, its programs' metrics over the step (m micro-batches
// and the optimizer) into sum; trace_at: where its traces sit in PipelineVariantRun::passes.
void add_stage_chunk(const ChunkSim& sim, const model::ModelChunk& chunk, size_t trace_at, int m, StageRun& r,
                     Metrics& sum) {
  r.layers += chunk.layers;
  r.forward_s += sim.costs.forward_s;
  r.backward_s += sim.costs.backward_s;
  r.gathered_forward_s = std::max(r.gathered_forward_s, sim.costs.gathered_forward_s);
  r.reduce_tail_s = std::max(r.reduce_tail_s, sim.costs.reduce_tail_s);
  r.weight_gradient_s += sim.costs.weight_gradient_s;
  r.optimizer_s += sim.optimizer.time_s;
  r.norm_s += sim.optimizer_norm_s;
  // With data parallelism one micro-batch's passes are the synchronised program's.
  const bool synced = sim.synced_trace.has_value();
  sum = weighted_sum(weighted_sum(sum, 1.0, sim.passes, synced ? m - 1 : m), 1.0, sim.optimizer, 1.0);
  if (synced) sum = weighted_sum(sum, 1.0, sim.synced, 1.0);
  r.programs.emplace_back(trace_at, synced ? m - 1 : m);
  if (synced) r.programs.emplace_back(trace_at + 1, 1);
}

// Each stage's run (its chunks' costs and programs, its timing, memory and micro-batches held) into run.stages;
// returns each stage's metrics over the step.
std::vector<Metrics> add_stage_runs(const model::Scenario& s, const model::Variant& variant,
                                    const std::vector<model::ModelChunk>& chunks, const std::vector<ChunkSim>& sims,
                                    const std::vector<size_t>& sim_of, const model::PipelineSchedule& schedule,
                                    const model::PipelineTiming& timing, const model::PipelineCosts& costs,
                                    PipelineRun& run) {
  const int p = s.parallelism.pp;
  const std::vector<int> held = model::peak_in_flight(schedule);
  const std::vector<std::vector<size_t>> stage_chunks =
      chunks_by_stage(s.pipeline.schedule, p, s.pipeline.virtual_stages);
  // Memory is the whole model's, whatever the simulated chunks hold.
  const std::vector<model::MemoryFootprint> memory =
      model::pipeline_stage_memory(s.arch, s.workload, s.pipeline, schedule, variant, s.parallelism.tp);
  const std::vector<size_t> trace_index = trace_positions(sims);
  std::vector<Metrics> stage_metrics;
  for (int stage = 0; stage < p; ++stage) {
    StageRun r;
    Metrics sum;
    for (const size_t c : stage_chunks[static_cast<size_t>(stage)]) {
      add_stage_chunk(sims[sim_of[c]], chunks[c], trace_index[sim_of[c]], run.microbatches, r, sum);
    }
    // The step hides part of the reductions the synchronised programs expose: busy and exposed that much less.
    const double hidden = hidden_reduce_tails(schedule, timing, costs, stage);
    sum.exposed_comm_s -= hidden;
    sum.exposed_data_comm_s -= hidden;
    sum.idle_s += hidden;
    r.busy_s = timing.busy_s[stage];
    r.end_s = timing.end_s[stage];
    r.peak_in_flight = held[stage];
    r.memory = memory[static_cast<size_t>(stage)];
    run.stages.push_back(r);
    stage_metrics.push_back(sum);
  }
  return stage_metrics;
}

// Per GPU, averaged over the stages: their programs' busy times; idle is the rest of the step of step_s.
Metrics mean_over_stages(const std::vector<Metrics>& stage_metrics, double step_s) {
  const int p = static_cast<int>(stage_metrics.size());
  Metrics mean;
  for (const Metrics& sm : stage_metrics) mean = weighted_sum(mean, 1.0, sm, 1.0 / p);
  mean.idle_s = step_s - (mean.time_s - mean.idle_s);
  mean.time_s = step_s;
  return mean;
}

// The step's draw over the limiter's window per GPU, the mean over the stages: each chunk's micro-batches (the last
// synchronised where the replicas synchronise) and its step's end, over their own time. The window leaves out the
// bubbles: a stage's passes run back to back between its warm-up and cool-down, and the limiter's window (a fraction
// of a second) holds them, not the idle stretches at the step's ends.
WindowDraw step_draw(const model::Scenario& s, const std::vector<ChunkSim>& sims, const std::vector<size_t>& sim_of) {
  const double m = static_cast<double>(s.workload.microbatches);
  const double synced = s.workload.data_parallel.enabled() ? 1.0 : 0.0;
  WindowDraw step;
  const double stages = s.parallelism.pp;
  const auto add = [&](const WindowDraw& d, double times) {
    step.span_s += d.span_s * times / stages;
    step.compute_s += d.compute_s * times / stages;
    step.other_J += d.other_J * times / stages;
  };
  for (const size_t i : sim_of) {
    add(sims[i].plain_draw, m - synced);
    add(sims[i].synced_draw, synced);
    add(sims[i].optimizer_draw, 1.0);
  }
  return step;
}

// run_pipeline at the clock `cost` holds (the programs simulated at it, none finding its own); `draw` set to the
// step's.
PipelineVariantRun run_pipeline_at(const model::Scenario& s, const model::Variant& variant, const CostModel& cost,
                                   const EngineOptions& options, const Fabric& job, WindowDraw& draw);

}  // namespace

// Under a windowed profile the step is the window: its clock is where the step's mean draw meets the limit, found as
// simulate() finds a program's (runner/window_clock.hpp), every program of the step simulated at it; the whole-step
// simulation (--no-symmetry) runs at the same clock, so that both modes agree.
PipelineVariantRun run_pipeline(const model::Scenario& s, const model::Variant& variant, const CostModel& cost,
                                const EngineOptions& options, const Fabric& job) {
  if (!windowed_power(cost.profile())) {
    WindowDraw unused;
    return run_pipeline_at(s, variant, cost, options, job, unused);
  }
  EngineOptions held = options;
  held.window_clock = false;
  return at_window_clock(
             cost,
             [&](const CostModel& at, WindowDraw& draw) { return run_pipeline_at(s, variant, at, held, job, draw); },
             false, [](const PipelineVariantRun& ran) { return ran.metrics.time_s; })
      .first;
}

namespace {

PipelineVariantRun run_pipeline_at(const model::Scenario& s, const model::Variant& variant, const CostModel& cost,
                                   const EngineOptions& options, const Fabric& job, WindowDraw& draw) {
  const int p = s.parallelism.pp, tp = s.parallelism.tp;
  const int m = static_cast<int>(s.workload.microbatches);
  const std::vector<model::ModelChunk> chunks = model::model_chunks(s.workload.layers, p, s.pipeline);
  if (options.data_group) refuse_unbounded_whole_step(s, variant, chunks, options);
  std::vector<size_t> sim_of;
  std::vector<ChunkSim> sims = simulate_distinct_chunks(s, variant, chunks, cost, options, sim_of);
  PipelineVariantRun out;
  PipelineRun& run = out.pipeline;
  run.spec = s.pipeline;
  run.microbatches = m;
  // With data parallelism each distinct chunk runs twice: plain, and synchronised over the replicas.
  run.programs_simulated = static_cast<int>(sims.size()) * (s.workload.data_parallel.enabled() ? 2 : 1);
  run.activation_bytes = model::stage_activation_bytes_per_rank(s.arch, s.workload, tp);
  model::PipelineCosts costs;
  for (const size_t i : sim_of) costs.chunk.push_back(sims[i].costs);
  cost_stage_sends(s, cost, job, chunks.size(), run, costs);
  model::PipelineCosts free_sends = costs;
  free_sends.hop_s.clear();
  const model::PipelineSchedule schedule =
      model::make_pipeline_schedule(s.pipeline.schedule, p, m, s.pipeline.virtual_stages, free_sends);
  const model::PipelineTiming scheduled = time_pipeline(schedule, costs);
  // --no-symmetry: the whole step simulated instead, in the order the schedule's timing ran it.
  run.simulated_whole = options.data_group.has_value();
  const model::PipelineTiming timing =
      run.simulated_whole
          ? simulate_whole(s, schedule, scheduled, chunk_programs(sims, sim_of), run.activation_bytes, cost, options)
          : scheduled;
  run.pipeline_s = timing.step_s;
  run.bubble_fraction = timing.bubble_fraction;
  run.spans = timing.spans;
  // What the sends add: the step less the same step with free sends, timed by the same model (sends of no bytes are
  // no NCCL calls and take no time, data_group.hpp).
  const double free_sends_step_s =
      run.simulated_whole
          ? simulate_whole(s, schedule, scheduled, chunk_programs(sims, sim_of), 0.0, cost, options).step_s
          : time_pipeline(schedule, free_sends).step_s;
  run.send_exposed_s = timing.step_s - free_sends_step_s;
  const std::vector<Metrics> stage_metrics =
      add_stage_runs(s, variant, chunks, sims, sim_of, schedule, timing, costs, run);
  if (s.workload.optimizer) end_stages(s, cost, timing.end_s, static_cast<int>(chunks.size()), run);
  for (const StageRun& r : run.stages) out.metrics.time_s = std::max(out.metrics.time_s, r.end_s);
  out.metrics = mean_over_stages(stage_metrics, out.metrics.time_s);
  draw = step_draw(s, sims, sim_of);
  run.clock_ratio = cost.clock_ratio();
  for (ChunkSim& sim : sims) {
    out.passes.push_back(std::move(*sim.trace));
    if (sim.synced_trace) out.passes.push_back(std::move(*sim.synced_trace));
  }
  return out;
}

}  // namespace

}  // namespace tpsim::sim
