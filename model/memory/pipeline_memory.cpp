// A pipeline's stage memory from its whole-model chunks and the micro-batches its schedule holds.
#include "model/memory/pipeline_memory.hpp"

#include <algorithm>

namespace tpsim::model {
namespace {

// One model chunk's memory per GPU (one micro-batch's activations), what its forward saves, and the gradient it
// accumulates unsharded over the step's micro-batches under FSDP.
struct ChunkMemory {
  MemoryFootprint memory;
  SavedActivations saved;
  double accumulated_gradient_bytes = 0;
};

ChunkMemory chunk_memory(const ArchSpec& arch, const Workload& chunk, const Variant& variant, int tp) {
  ChunkMemory c;
  c.saved = training_saved_activations(arch, chunk, variant, tp);
  c.memory = memory_footprint(arch, chunk, variant, tp, c.saved);
  c.accumulated_gradient_bytes = accumulated_unsharded_gradient_bytes(arch, chunk, tp);
  return c;
}

// The stage's memory: its chunks' parameters, gradients and optimizer state, the live block of its largest chunk,
// what it holds at its peak (the saved activations of the micro-batch chunks in flight, the gradients accumulated
// unsharded), and one layer's recomputation.
MemoryFootprint stage_memory(const std::vector<const ChunkMemory*>& chunks, const HeldPeak& held) {
  MemoryFootprint m;
  double live = 0, recompute = 0;
  for (const ChunkMemory* c : chunks) {
    m.weights_bytes += c->memory.weights_bytes;
    m.gradient_bytes += c->memory.gradient_bytes;
    m.optimizer_bytes += c->memory.optimizer_bytes;
    m.buffer_bytes = std::max(m.buffer_bytes, c->memory.buffer_bytes);
    m.symmetric_memory_bytes = std::max(m.symmetric_memory_bytes, c->memory.symmetric_memory_bytes);
    live = std::max(live, c->memory.activation_bytes - c->saved.forward_bytes - c->saved.recompute_bytes);
    recompute = std::max(recompute, c->saved.recompute_bytes);
  }
  m.activation_bytes = live + held.activation_bytes + recompute;
  m.gradient_bytes += held.gradient_bytes;
  return m;
}

}  // namespace

std::vector<ModelChunk> whole_model_chunks(const ArchSpec& arch, const Workload& workload, int stages,
                                           const PipelineSpec& spec) {
  if (workload.layers == arch.layers) return model_chunks(arch.layers, stages, spec);
  PipelineSpec even = spec;
  even.chunk_layers.clear();
  std::vector<ModelChunk> chunks = model_chunks(arch.layers, stages, even);
  const auto count = static_cast<int64_t>(chunks.size());
  for (int64_t extra = 0; extra < arch.layers % count; ++extra) {
    ++chunks[static_cast<size_t>((1 + extra) % count)].layers;
  }
  for (size_t c = 1; c < chunks.size(); ++c) chunks[c].first_layer = chunks[c - 1].first_layer + chunks[c - 1].layers;
  return chunks;
}

std::vector<MemoryFootprint> pipeline_stage_memory(const ArchSpec& arch, const Workload& workload,
                                                   const PipelineSpec& spec, const PipelineSchedule& schedule,
                                                   const Variant& variant, int tp) {
  const int stages = schedule.stages;
  const Workload whole = whole_model_workload(arch, workload);
  const std::vector<ModelChunk> chunks = whole_model_chunks(arch, workload, stages, spec);
  // Chunks that run the same program hold the same memory: each distinct one built once.
  std::vector<ModelChunk> distinct;
  std::vector<ChunkMemory> memory;
  std::vector<size_t> memory_of;
  for (const ModelChunk& chunk : chunks) {
    const auto same = std::find_if(distinct.begin(), distinct.end(),
                                   [&](const ModelChunk& c) { return same_program(arch, c, chunk); });
    memory_of.push_back(static_cast<size_t>(same - distinct.begin()));
    if (same == distinct.end()) {
      distinct.push_back(chunk);
      memory.push_back(chunk_memory(arch, chunk_workload(whole, chunk), variant, tp));
    }
  }
  std::vector<std::vector<const ChunkMemory*>> own(static_cast<size_t>(stages));
  std::vector<std::vector<double>> saved(static_cast<size_t>(stages)), gradients(static_cast<size_t>(stages));
  for (int stage = 0; stage < stages; ++stage) {
    for (int virtual_stage = 0; virtual_stage < spec.virtual_stages; ++virtual_stage) {
      const auto c = static_cast<size_t>(model_chunk_of(spec.schedule, stages, stage, virtual_stage));
      own[static_cast<size_t>(stage)].push_back(&memory[memory_of[c]]);
      saved[static_cast<size_t>(stage)].push_back(memory[memory_of[c]].saved.forward_bytes);
      gradients[static_cast<size_t>(stage)].push_back(memory[memory_of[c]].accumulated_gradient_bytes);
    }
  }
  const std::vector<HeldPeak> held = peak_held(schedule, saved, gradients);
  std::vector<MemoryFootprint> out;
  out.reserve(static_cast<size_t>(stages));
  for (int stage = 0; stage < stages; ++stage) {
    out.push_back(stage_memory(own[static_cast<size_t>(stage)], held[static_cast<size_t>(stage)]));
  }
  return out;
}

}  // namespace tpsim::model
