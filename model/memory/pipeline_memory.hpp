// Memory per GPU of each stage of a pipeline-parallel training job, for the whole model whatever
// `workload.layers` simulates: each stage's chunks' parameters, gradients and optimizer state, the live block
// of its largest chunk, the forward's saved activations of the micro-batch chunks the schedule holds at once
// (beside FSDP's gradients accumulated unsharded over the micro-batches, where the sum peaks), and one layer's
// recomputation. The runtime's parts (allocator, NCCL, context) are added in sim/.
#pragma once

#include <vector>

#include "model/memory/memory_footprint.hpp"
#include "model/pipeline/pipeline_schedule.hpp"
#include "model/pipeline/pipeline_spec.hpp"

namespace tpsim::model {

// The whole model's chunks: `spec`'s own when the workload runs every layer, else the model's layers split as
// evenly as they go over the same number of chunks, the extra layers one each from the second chunk on (the
// first and last chunks hold the embedding and the LM head).
std::vector<ModelChunk> whole_model_chunks(const ArchSpec& arch, const Workload& workload, int stages,
                                           const PipelineSpec& spec);

// Per stage of `schedule`, its memory per GPU over the whole model's chunks (`workload`'s training keys, every
// layer), at the moment its saved activations and accumulated gradients (peak_held) peak together.
std::vector<MemoryFootprint> pipeline_stage_memory(const ArchSpec& arch, const Workload& workload,
                                                   const PipelineSpec& spec, const PipelineSchedule& schedule,
                                                   const Variant& variant, int tp);

}  // namespace tpsim::model
