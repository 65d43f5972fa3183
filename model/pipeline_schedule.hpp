// Pipeline-parallel schedules: the ordered forward and backward passes each stage runs over a step's
// micro-batches (GPipe, 1F1B, Megatron's interleaved 1F1B over virtual stages), and their timing under
// per-chunk costs with free activation transfers, the reference the job simulation is checked against
// (bubble (p-1)/(m+p-1) under 1F1B, (p-1)/(v·m+p-1) interleaved: Narayanan et al., SC'21). Pure host logic.
#pragma once

#include <string>
#include <vector>

namespace tpsim::model {

enum class PipelineScheduleKind { kGpipe, kOneFOneB, kInterleaved };
// "gpipe", "1f1b", "interleaved"
std::string to_string(PipelineScheduleKind kind);

enum class PipelinePass { kForward, kBackward };

// One pass of one micro-batch through one of a stage's model chunks. Stage s holds the model chunks s,
// s + p, s + 2p, ... (virtual stage v is model chunk v·p + s), as Megatron's interleaved schedule places them.
struct PipelineStep {
  PipelinePass pass = PipelinePass::kForward;
  int microbatch = 0;
  int virtual_stage = 0;
  bool operator==(const PipelineStep&) const = default;
};

struct PipelineSchedule {
  PipelineScheduleKind kind = PipelineScheduleKind::kOneFOneB;
  int stages = 1;
  int microbatches = 1;
  int virtual_stages = 1;
  std::vector<std::vector<PipelineStep>> steps;  // per stage, in issue order
};

// Why `kind` cannot run these counts (interleaved needs virtual_stages >= 2 and micro-batches a multiple of
// the stages); empty when it can.
std::string pipeline_schedule_problem(PipelineScheduleKind kind, int stages, int microbatches, int virtual_stages);
// The schedule; throws InputError with pipeline_schedule_problem's reason.
PipelineSchedule make_pipeline_schedule(PipelineScheduleKind kind, int stages, int microbatches,
                                        int virtual_stages = 1);

// Seconds of one pass of one micro-batch through one model chunk (a stage's layers / virtual_stages).
struct ChunkCosts {
  double forward_s = 0;
  double backward_s = 0;
};

struct PipelineTiming {
  double step_s = 0;           // the last pass's end
  double bubble_fraction = 0;  // idle stage-time over stages x step_s
  std::vector<double> busy_s;  // per stage
};

// The schedule run with every pass taking `costs` and activations moving between stages in no time: each
// stage runs its steps in order, each as soon as its input is there (a forward the previous chunk's
// forward, a backward the next chunk's backward, the last chunk's backward its own forward).
PipelineTiming time_pipeline(const PipelineSchedule& schedule, const ChunkCosts& costs);

}  // namespace tpsim::model
