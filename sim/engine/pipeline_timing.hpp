// The pipeline schedule's timing: a step's passes run on their stages with each chunk's simulated costs, each pass
// as soon as its input is there. The engine simulates one chunk's ops on the GPUs; this runs the schedule's passes
// over the stages with what those simulations took.
#pragma once

#include "model/pipeline/pipeline_schedule.hpp"

namespace tpsim::sim {

// The schedule run with every pass taking its chunk's cost: each stage runs its steps in order, each as
// soon as its input is there (a forward the previous chunk's forward, a backward the next chunk's backward,
// the last chunk's backward its own forward, a weight gradient its own backward), plus the hop's time where
// that input crosses a boundary between chunks.
model::PipelineTiming time_pipeline(const model::PipelineSchedule& schedule, const model::PipelineCosts& costs);
// The same with every chunk costing `costs` and free transfers.
model::PipelineTiming time_pipeline(const model::PipelineSchedule& schedule, const model::ChunkCosts& costs);

}  // namespace tpsim::sim
