// Reads the pipeline section and splits the model into chunks, each run as a one-micro-batch training program.
#include "model/pipeline/pipeline_spec.hpp"

#include <yaml-cpp/yaml.h>

#include "input/yaml_reader.hpp"
#include "model/graph/op.hpp"

namespace tpsim::model {

const std::vector<std::string>& pipeline_keys() {
  static const std::vector<std::string> keys = {"schedule", "virtual_stages", "chunk_layers"};
  return keys;
}

namespace {

// pipeline.chunk_layers: `chunks` positive layer counts adding up to the workload's layers.
std::vector<int64_t> read_chunk_layers(const YamlReader& in, const YAML::Node& node, int64_t chunks, int64_t layers) {
  const std::string valid = std::to_string(chunks) +
                            " layer counts (pp x virtual_stages), at least 1 each, adding up to "
                            "the " +
                            std::to_string(layers) + " layers";
  if (!node.IsSequence() || static_cast<int64_t>(node.size()) != chunks) {
    in.fail(node, "pipeline.chunk_layers must be a list of " + valid);
  }
  std::vector<int64_t> out;
  int64_t sum = 0;
  for (const YAML::Node& entry : node) {
    out.push_back(in.positive_int(entry, "pipeline.chunk_layers entry"));
    sum += out.back();
  }
  if (sum != layers) in.fail(node, "pipeline.chunk_layers add up to " + std::to_string(sum) + "; valid: " + valid);
  return out;
}

}  // namespace

PipelineSpec read_pipeline(const YamlReader& in, const YAML::Node& node, const YAML::Node& pp_key, int stages,
                           const Workload& workload) {
  PipelineSpec spec;
  const YAML::Node where = node.IsDefined() ? node : pp_key;
  if (stages < 2) {
    if (node.IsDefined())
      in.fail(node, "pipeline needs parallelism.pp of 2 or more (pp is " + std::to_string(stages) + ")");
    return spec;
  }
  if (workload.phase != Phase::kTrain) {
    in.fail(pp_key, "parallelism.pp > 1 pipelines a training step: it needs workload.phase train (phase is " +
                        to_string(workload.phase) + ")");
  }
  if (node.IsDefined()) {
    in.expect_map(node, "pipeline", pipeline_keys());
    if (const YAML::Node s = node["schedule"]) {
      spec.schedule = in.choice_of(s, "pipeline.schedule", pipeline_schedule_kinds());
    }
    if (const YAML::Node v = node["virtual_stages"]) {
      // A bound on the input only: the layers must still split into stages x virtual_stages chunks of at least one.
      spec.virtual_stages = static_cast<int>(in.int_in(v, "pipeline.virtual_stages", 1, 64));
    }
  }
  const int64_t chunks = static_cast<int64_t>(stages) * spec.virtual_stages;
  if (node.IsDefined() && node["chunk_layers"]) {
    spec.chunk_layers = read_chunk_layers(in, node["chunk_layers"], chunks, workload.layers);
  } else if (workload.layers % chunks != 0) {
    in.fail(where, std::to_string(workload.layers) + " layers do not split evenly into " + std::to_string(stages) +
                       " stages x " + std::to_string(spec.virtual_stages) +
                       " virtual stages; valid: workload.layers a multiple of " + std::to_string(chunks) +
                       ", or pipeline.chunk_layers");
  }
  const std::string why =
      pipeline_schedule_problem(spec.schedule, stages, static_cast<int>(workload.microbatches), spec.virtual_stages);
  if (!why.empty()) in.fail(where, "pipeline.schedule " + to_string(spec.schedule) + ": " + why);
  return spec;
}

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

double stage_activation_bytes_per_rank(const ArchSpec& arch, const Workload& workload, int tp) {
  const double tokens = static_cast<double>(primary_pass(workload).tokens());
  return tokens * static_cast<double>(arch.hidden) * kBf16Bytes / tp;
}

}  // namespace tpsim::model
