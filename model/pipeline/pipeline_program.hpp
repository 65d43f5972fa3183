// One pipelined training step as a single program over every stage (--no-symmetry's check of the schedule's timing,
// sim/run/pipeline_run.hpp): each stage's passes in the schedule's order, each pass the ops of its chunk's
// one-micro-batch program that belong to it, and a send between stages wherever a pass's input comes from another
// stage.
#pragma once

#include <utility>
#include <vector>

#include "model/graph/layer_graph.hpp"
#include "model/pipeline/pipeline_schedule.hpp"

namespace tpsim::model {

struct PipelineProgram {
  LayerGraph graph{1};
  // Per stage, per step of its schedule (PipelineSchedule::steps): its ops, ids [first, second) of `graph` (the
  // sends that bring its input come just before).
  std::vector<std::vector<std::pair<OpId, OpId>>> passes;
};

// `chunk_programs[c]`: model chunk c's program for one micro-batch (its forward, then its backward), with the data
// group's synchronisation where the job has one: that is the step's first forward (FSDP's gathers) and last backward
// (the gradients' reduction); the micro-batches between run without the data group's collectives, as the symmetric
// run assumes (sim/run/pipeline_run.cpp). The first forward's gathers all start with the step, one after another on
// their stream: the stage keeps its parameters gathered for the step anyway, so nothing holds them back.
// - A forward pass is the program's forward ops; a backward pass its other ops, less under a zero-bubble schedule the
//   weight-gradient GEMMs, every op that reads what they write and every op only they read (sequence parallelism's
//   re-gathered layer inputs), which are its weight-gradient pass.
// - Every op keeps its dependencies, on the copies of the same micro-batch; the stage's streams run its passes in
//   order; the ops that start a pass (no input from the pass itself; the data group's collectives excepted) read its
//   input: the previous chunk's forward output, or the next chunk's input gradient.
// - Where that comes from another stage, a send (CommGroup::kPipeline, `send_bytes` per GPU, its group stride the
//   GPUs between the two stages' same rank at `stage_stride` per stage) runs on both: the sender's side once the
//   producing pass's compute is done, the receiver's once its compute stream reaches the reading pass (as PyTorch's
//   schedules post the receive), on a stream of its own.
// `order`: when each step ran in the schedule's timing (time_pipeline's spans, indexed as schedule.steps); the
// program issues the passes in that order, so that every input precedes its reader. Throws std::logic_error on a
// program whose passes cannot be split so (a builder bug).
PipelineProgram build_pipeline_program(const PipelineSchedule& schedule,
                                       const std::vector<const LayerGraph*>& chunk_programs,
                                       const std::vector<std::vector<PipelineSpan>>& order, double send_bytes,
                                       int stage_stride);

}  // namespace tpsim::model
