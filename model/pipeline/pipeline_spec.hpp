// A pipeline-parallel training job's layout: the schedule and virtual stages a scenario's `pipeline:`
// section chooses, the model chunks its parallelism.pp stages hold (equal runs of layers, the embedding on
// the first chunk, the final norm, LM head and loss on the last), the program one chunk runs for one
// micro-batch, and the activation one TP rank sends to the next stage.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/graph/variant.hpp"
#include "model/graph/workload.hpp"
#include "model/layers/arch_spec.hpp"
#include "model/pipeline/pipeline_schedule.hpp"

namespace tpsim::model {

struct PipelineSpec {
  PipelineScheduleKind schedule = PipelineScheduleKind::kOneFOneB;
  int virtual_stages = 1;
  // The layers of each model chunk in model order (stages x virtual_stages of them); empty: an even split.
  std::vector<int64_t> chunk_layers;
};

// One model chunk: a run of consecutive layers, with the model's ends where it holds them.
struct ModelChunk {
  int64_t layers = 0;
  bool embedding = false;
  bool head = false;
  int64_t first_layer = 0;  // the model's number of its first layer
  bool operator==(const ModelChunk&) const = default;
};

// Whether two chunks run the same program: the same number of layers, layer for layer of the same kind, and
// the same model ends (a plain stack's chunks of equal size at equal ends do, wherever they start).
bool same_program(const ArchSpec& arch, const ModelChunk& a, const ModelChunk& b);

// The stages x virtual_stages chunks in model order (chunk c runs on stage_of_chunk(c)): `spec.chunk_layers`,
// or `layers` split evenly (read_pipeline checks either).
std::vector<ModelChunk> model_chunks(int64_t layers, int stages, const PipelineSpec& spec);

// The training program of one chunk for one micro-batch: its layers, its ends, and its share of the optimizer
// (the parameters it holds).
Workload chunk_workload(const Workload& workload, const ModelChunk& chunk);

// What one chunk's passes run under a pipeline: its micro-batch with the step's synchronisation over the replicas
// (FSDP's gathers before its forward, the gradients' reduction after its backward: the step's first forward and last
// backward), the same micro-batch without it (those between), and, with the optimizer, the step's end alone (no
// micro-batch: the chunk's clipping and AdamW).
struct ChunkWorkloads {
  Workload synchronised;
  Workload microbatch;
  std::optional<Workload> step_end;
};
ChunkWorkloads chunk_workloads(const Workload& workload, const ModelChunk& chunk);

// Bytes one TP rank sends to the next stage per micro-batch: the layer output in the workload's dtype, a
// 1/tp shard of it where the variant shards the sequence (sp, async) or Megatron's scatter-gather
// optimisation splits the replicated tensor (tp, dtp, nocomm). The gradient going back is the same size.
double stage_activation_bytes_per_rank(const ArchSpec& arch, const Workload& workload, int tp);

}  // namespace tpsim::model
