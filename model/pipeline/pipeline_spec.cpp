// Splits the model into a pipeline's chunks, each run as a one-micro-batch training program (the section's
// reader: input/section_readers.cpp).
#include "model/pipeline/pipeline_spec.hpp"

#include "model/graph/op.hpp"

namespace tpsim::model {

std::vector<ModelChunk> model_chunks(int64_t layers, int stages, const PipelineSpec& spec) {
  const int count = stages * spec.virtual_stages;
  std::vector<ModelChunk> chunks(static_cast<size_t>(count), ModelChunk{layers / count, false, false});
  for (size_t c = 0; c < spec.chunk_layers.size() && c < chunks.size(); ++c) chunks[c].layers = spec.chunk_layers[c];
  for (size_t c = 1; c < chunks.size(); ++c) chunks[c].first_layer = chunks[c - 1].first_layer + chunks[c - 1].layers;
  chunks.front().embedding = true;
  chunks.back().head = true;
  return chunks;
}

bool same_program(const ArchSpec& arch, const ModelChunk& a, const ModelChunk& b) {
  if (a.layers != b.layers || a.embedding != b.embedding || a.head != b.head) return false;
  for (int64_t layer = 0; layer < a.layers; ++layer) {
    if (arch.kind(a.first_layer + layer) != arch.kind(b.first_layer + layer)) return false;
    if (arch.window_at(a.first_layer + layer) != arch.window_at(b.first_layer + layer)) return false;
  }
  return true;
}

Workload chunk_workload(const Workload& workload, const ModelChunk& chunk) {
  Workload w = workload;
  w.layers = chunk.layers;
  w.first_layer = chunk.first_layer;
  w.microbatches = 1;
  w.embedding = chunk.embedding;
  w.head = chunk.head;
  return w;
}

ChunkWorkloads chunk_workloads(const Workload& workload, const ModelChunk& chunk) {
  ChunkWorkloads out{chunk_workload(workload, chunk), {}, std::nullopt};
  const bool optimizer = out.synchronised.optimizer;
  out.synchronised.optimizer = false;
  out.microbatch = out.synchronised;
  out.microbatch.data_parallel = DataParallel{};
  // Its parameters stay as the step's first forward gathered them (fp8 under fsdp.fp8_all_gather).
  out.microbatch.data_parallel.fp8_all_gather = out.synchronised.data_parallel.fp8_all_gather;
  // And its fp8 weight copies as the step's first micro-batch cast them, where the kernels cache them.
  out.microbatch.fp8_weights_cached = true;
  if (optimizer) {
    Workload end = out.synchronised;
    end.microbatches = 0;
    end.optimizer = true;
    out.step_end = end;
  }
  return out;
}

double stage_activation_bytes_per_rank(const ArchSpec& arch, const Workload& workload, int tp) {
  const double tokens = static_cast<double>(primary_pass(workload).tokens());
  return tokens * static_cast<double>(arch.hidden) * kBf16Bytes / tp;
}

}  // namespace tpsim::model
