// A pipeline-parallel training step (parallelism.pp > 1): each distinct model chunk's program simulated
// once for one micro-batch on its TP group (stages with the same program share it), the activation
// send/recv between stages costed over NVLink or the network as the stages are placed (TP innermost, stage
// s on GPUs s·tp to (s+1)·tp - 1), and the schedule timed with those costs (model/pipeline/pipeline_schedule.hpp);
// each stage's optimizer runs after its last pass, its clipping once every stage's norm is summed. Assumed: a chunk's
// passes cost the same for every micro-batch (the first one's: weight gradients written, not accumulated), and the
// sends, on their own streams, take no SMs from compute.
#pragma once

#include <utility>
#include <vector>

#include "model/memory/memory_footprint.hpp"
#include "model/pipeline/pipeline_program.hpp"
#include "model/pipeline/pipeline_spec.hpp"
#include "model/scenario.hpp"
#include "sim/cost/cost_model.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/pass_trace.hpp"
#include "sim/engine/timeline.hpp"
#include "sim/report/metrics.hpp"

namespace tpsim::sim {

// One stage's share of the step, per GPU of the stage.
struct StageRun {
  int64_t layers = 0;            // decoder layers over its chunks
  double forward_s = 0;          // one micro-batch through the stage's chunks
  double backward_s = 0;         // its backward, recomputation included
  double weight_gradient_s = 0;  // the weight-gradient GEMMs within backward_s
  // Data parallelism (model::ChunkCosts, the largest of the stage's chunks): the first forward's span with its
  // FSDP gathers from the step's start, and how long the gradients' reduction runs past the last backward.
  double gathered_forward_s = 0;
  double reduce_tail_s = 0;
  double optimizer_s = 0;  // after the stage's last pass: gradient clipping and AdamW
  double norm_s = 0;       // of optimizer_s: the local gradient norm, before the stages' norms are summed
  double busy_s = 0;       // its passes over the step
  double end_s = 0;        // its optimizer's end (after every stage's norm: the slowest stage's)
  int peak_in_flight = 0;  // micro-batch chunks whose activations it holds at once
  model::MemoryFootprint memory;
  // The programs its passes ran over the step: an index into the variant's passes (PipelineVariantRun::passes, one
  // micro-batch through one of its chunks) and how many of the step's micro-batches ran it.
  std::vector<std::pair<size_t, int>> programs;
};

struct PipelineRun {
  model::PipelineSpec spec;
  int microbatches = 1;
  std::vector<double> hop_s;  // per boundary between model chunks c and c+1: one send of the activation
  std::vector<bool> hop_crosses_nodes;
  double activation_bytes = 0;  // per TP rank and micro-batch, each hop
  std::vector<StageRun> stages;
  std::vector<std::vector<model::PipelineSpan>> spans;  // per stage: when each pass ran
  double pipeline_s = 0;                                // the last pass's end
  // The SM clock every program of the step ran at, relative to the profile's (the step's window under a windowed
  // profile, sim/engine/runner/window_clock.hpp).
  double clock_ratio = 1;
  double bubble_fraction = 0;  // idle stage-time in the passes' span
  // What the sends add to the passes' span: the schedule timed with them, less timed without them (the
  // pipeline dimension's exposed communication).
  double send_exposed_s = 0;
  // Before clipping, the stages' gradient norms summed: one fp32 all-reduced over the stages (every stage waits for
  // the slowest). Before that, tied embeddings held on two stages (the embedding on the first, its copy as the LM head
  // on the last) sum their gradients: an all-reduce between the two, as Megatron's finalize_model_grads runs it.
  double grad_norm_sync_s = 0;
  double tied_embedding_sync_s = 0;  // 0: untied, or both ends on one stage (zb-v)
  int programs_simulated = 0;
  // --no-symmetry: the step simulated whole (every stage and replica at once, the sends as flows on the job's fabric),
  // its passes' spans, busy times, bubble and stage ends from that simulation instead of the schedule's timing.
  bool simulated_whole = false;
};

// What run_pipeline gives a variant: the step's metrics (time the slowest stage's end; the busy times each
// stage's passes sum to, averaged over stages), the chunk programs' traces, and the pipeline itself.
struct PipelineVariantRun {
  Metrics metrics;
  std::vector<PassTrace> passes;
  PipelineRun pipeline;
};

// A chunk's one-micro-batch program as a zero-bubble schedule of `kind` runs it on one stage: its forward, its input
// gradient and its weight gradient as three passes (PipelineProgram::passes[0]), one after another.
model::PipelineProgram split_backward_program(const model::LayerGraph& graph, model::PipelineScheduleKind kind);

// `cost` holds the TP group's fabric; `job` the whole job's (where the stages sit).
PipelineVariantRun run_pipeline(const model::Scenario& scenario, const model::Variant& variant, const CostModel& cost,
                                const EngineOptions& options, const Fabric& job);

}  // namespace tpsim::sim
