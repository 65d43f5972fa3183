// Pipeline-parallel schedules: the ordered forward and backward passes each stage runs over a step's
// micro-batches (GPipe, 1F1B, Megatron's interleaved 1F1B over virtual stages, and zero-bubble ZB-H1 with
// its split backward, and ZB-V's V of two chunks per stage), and their timing under per-chunk costs with a fixed
// transfer between stages, the reference the job simulation is checked against (bubble (p-1)/(m+p-1) under 1F1B,
// (p-1)/(v·m+p-1) interleaved: Narayanan et al., SC'21; (p-1)(F+B-W) per stage under ZB-H1: Qi et al., ICLR'24). Pure
// host logic.
#pragma once

#include <string>
#include <vector>

#include "base/enum_names.hpp"

namespace tpsim::model {

enum class PipelineScheduleKind { kGpipe, kOneFOneB, kInterleaved, kZeroBubbleH1, kZeroBubbleV };
// pipeline.schedule's values, in the order its message lists them.
inline constexpr EnumName<PipelineScheduleKind> kPipelineScheduleNames[] = {
    {PipelineScheduleKind::kGpipe, "gpipe"},
    {PipelineScheduleKind::kOneFOneB, "1f1b"},
    {PipelineScheduleKind::kInterleaved, "interleaved"},
    {PipelineScheduleKind::kZeroBubbleH1, "zb-h1"},
    {PipelineScheduleKind::kZeroBubbleV, "zb-v"},
};
std::string to_string(PipelineScheduleKind kind);
// Whether the schedule runs each backward as two passes: the input gradient, which the previous stage waits
// for, and the weight gradient, which nothing waits for (zero-bubble schedules).
bool splits_weight_gradient(PipelineScheduleKind kind);

// kBackward is the whole backward, or only its input gradient where the schedule splits it off
// kWeightGradient.
enum class PipelinePass { kForward, kBackward, kWeightGradient };
// As the critical path names a pass.
inline constexpr EnumName<PipelinePass> kPipelinePassNames[] = {
    {PipelinePass::kForward, "forward"},
    {PipelinePass::kBackward, "backward"},
    {PipelinePass::kWeightGradient, "weight gradient"},
};
std::string to_string(PipelinePass pass);

// One pass of one micro-batch through one of a stage's model chunks (model_chunk_of: which).
struct PipelineStep {
  PipelinePass pass = PipelinePass::kForward;
  int microbatch = 0;
  int virtual_stage = 0;
  bool operator==(const PipelineStep&) const = default;
};

// The model chunk virtual stage `virtual_stage` of `stage` holds: v·p + s, as Megatron's interleaved schedule places
// them (stage s holds chunks s, s + p, s + 2p, ...), or under zb-v the V: chunk s, then 2p - 1 - s.
int model_chunk_of(PipelineScheduleKind kind, int stages, int stage, int virtual_stage);
// The stage that holds model chunk `chunk`.
int stage_of_chunk(PipelineScheduleKind kind, int stages, int chunk);

struct PipelineSchedule {
  PipelineScheduleKind kind = PipelineScheduleKind::kOneFOneB;
  int stages = 1;
  int microbatches = 1;
  int virtual_stages = 1;
  std::vector<std::vector<PipelineStep>> steps;  // per stage, in issue order
};

// Why `kind` cannot run these counts (interleaved needs virtual_stages >= 2 and micro-batches a multiple of
// the stages, zb-v virtual_stages 2); empty when it can.
std::string pipeline_schedule_problem(PipelineScheduleKind kind, int stages, int microbatches, int virtual_stages);
struct PipelineCosts;

// The schedule; throws InputError with pipeline_schedule_problem's reason. zb-v's order is built for the pass
// times it will run with: `costs` where given (the job's chunks), else every pass one unit long (F = B = W, the
// case the schedule is designed for).
PipelineSchedule make_pipeline_schedule(PipelineScheduleKind kind, int stages, int microbatches,
                                        int virtual_stages = 1);
PipelineSchedule make_pipeline_schedule(PipelineScheduleKind kind, int stages, int microbatches, int virtual_stages,
                                        const PipelineCosts& costs);

// Per stage, the most micro-batch chunks whose forward has run and whose activations are still held: until
// the backward, or the weight-gradient pass where the schedule splits it off (it reads the layer inputs).
std::vector<int> peak_in_flight(const PipelineSchedule& schedule);
// The same in bytes: each held micro-batch chunk counts `saved[stage][virtual_stage]`, its chunk's saved
// activations (chunks of one stage differ: the first holds the embedding, the last the LM head and loss).
std::vector<double> peak_held_bytes(const PipelineSchedule& schedule, const std::vector<std::vector<double>>& saved);
// What a stage holds at the moment the sum peaks: the saved activations of the micro-batch chunks in flight, and the
// gradients that accumulate unsharded over the step's micro-batches, `gradients[stage][virtual_stage]` per chunk, from
// the end of the chunk's first weight-gradient pass (its backward, where the schedule does not split it) until the end
// of its last, which reduces them (FSDP under PyTorch's pipeline schedules: model/memory/pipeline_memory.cpp).
struct HeldPeak {
  double activation_bytes = 0;
  double gradient_bytes = 0;
};
std::vector<HeldPeak> peak_held(const PipelineSchedule& schedule, const std::vector<std::vector<double>>& saved,
                                const std::vector<std::vector<double>>& gradients);

// Seconds of one pass of one micro-batch through one model chunk.
struct ChunkCosts {
  double forward_s = 0;
  double backward_s = 0;         // the whole backward: input and weight gradients
  double weight_gradient_s = 0;  // the part of backward_s that computes weight gradients
  // Data parallelism. The step's first forward of the chunk ends no earlier than `gathered_forward_s` after the
  // step starts: FSDP gathers the parameters it keeps for the step from the start, while earlier stages fill
  // the pipeline (0: no gather).
  double gathered_forward_s = 0;
  // The gradients' reduction over the replicas in the step's last backward: what it adds to that pass (its traffic
  // slowing the backward's kernels), and how long it runs past it on its own stream (delaying the stage's optimizer,
  // not its next pass).
  double synced_backward_extra_s = 0;
  double reduce_tail_s = 0;
};

struct PipelineCosts {
  std::vector<ChunkCosts> chunk;  // per model chunk, stages x virtual_stages of them
  // Per boundary between model chunks c and c + 1: the activation (forward) or its gradient (backward)
  // moving across it, on its own stream, so that it delays the receiver, never the sender. Empty: free.
  std::vector<double> hop_s;
};

// When one step of the schedule ran on its stage.
struct PipelineSpan {
  PipelineStep step;
  double start_s = 0;
  double end_s = 0;
};

// A schedule run with its costs (sim/engine/pipeline_timing.hpp).
struct PipelineTiming {
  double step_s = 0;           // the last pass's end
  double bubble_fraction = 0;  // idle stage-time over stages x step_s
  std::vector<double> busy_s;  // per stage
  std::vector<double> end_s;   // per stage: its last pass's end, or its last gradient reduction's (reduce_tail_s)
  std::vector<std::vector<PipelineSpan>> spans;  // per stage, in issue order
};

// The idle share of the stages' time over the passes' span: 1 - sum(busy_s) / (stages x step_s) (0 without a span).
double bubble_fraction(const std::vector<double>& busy_s, double step_s);

}  // namespace tpsim::model
