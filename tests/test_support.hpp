// Helpers shared by tests: load presets and build graphs and cost models without a scenario file.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include <stdlib.h>
#include <unistd.h>

#include "input/gpu_reader.hpp"
#include "input/model/hf_config.hpp"
#include "input/presets.hpp"
#include "input/profile/profile_reader.hpp"
#include "input/yaml_reader.hpp"
#include "model/graph/graph_builder.hpp"
#include "model/graph/program_builder.hpp"
#include "model/scenario.hpp"
#include "sim/cost/cost_model.hpp"
#include "sim/cost/gpu_spec.hpp"
#include "sim/cost/profile.hpp"
#include "sim/engine/isolated_run.hpp"

namespace tpsim::test {

inline sim::GpuSpec gpu_preset(const std::string& name) {
  const model::YamlReader reader(name);
  return sim::read_gpu_spec(reader, reader.parse_text(std::string(*model::find_preset("gpus", name, "yaml"))));
}

inline sim::CostProfile profile_preset(const std::string& name) {
  return sim::parse_profile(std::string(*model::find_preset("profiles", name, "yaml")), name);
}

// When `op` ends on GPU `rank` in `timeline`; a missing span is a test bug.
inline double end_of(const sim::Timeline& timeline, model::OpId op, int rank) {
  for (const sim::OpSpan& span : timeline.spans) {
    if (span.op == op && span.rank == rank) return span.end_s;
  }
  throw std::logic_error("no span of op " + std::to_string(op) + " on GPU " + std::to_string(rank));
}

// `profile` at one clock whatever a program draws: without the power limiter's window (power.sustained_ratio 0,
// sim/engine/runner/window_clock.hpp), so that a test of the engine's mechanics can derive a kernel's time from
// cost.kernel_seconds. Tests of the window, and of shipped numbers, take the profile as shipped.
inline sim::CostProfile fixed_clock(sim::CostProfile profile) {
  return sim::short_benchmark_profile(std::move(profile));
}

inline sim::CostModel h100_cost() {
  return sim::CostModel(gpu_preset("h100-sxm"), profile_preset("h100-sxm"));
}

// A scenario's calibration line naming the h100-sxm profile with `power` (a flow map's entries, "sustained_ratio: 0")
// over its power section: a file written once per text and test process, removed at its exit.
inline std::string h100_calibration_with_power(const std::string& power) {
  struct File {
    std::string path = (std::filesystem::temp_directory_path() / "tpsim_profile_XXXXXX.yaml").string();
    explicit File(const std::string& text) {
      const int fd = ::mkstemps(path.data(), 5);
      if (fd < 0 || ::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
        throw std::runtime_error("cannot write " + path);
      }
      ::close(fd);
    }
    File(const File&) = delete;
    File& operator=(const File&) = delete;
    ~File() { std::filesystem::remove(path); }
  };
  static std::map<std::string, std::unique_ptr<File>> files;
  std::unique_ptr<File>& file = files[power];
  if (!file) file = std::make_unique<File>("gpu: h100-sxm\nbase: h100-sxm\npower: {" + power + "}\n");
  return "calibration: {profile: " + file->path + "}\n";
}

// The h100-sxm profile at a fixed clock (fixed_clock), for scenario tests of mechanics whose variants or programs
// must share a clock.
inline std::string h100_fixed_clock_calibration() {
  return h100_calibration_with_power("sustained_ratio: 0");
}

// The H100 SXM preset and its profile at a fixed clock (fixed_clock).
inline sim::CostModel h100_fixed_clock_cost() {
  return sim::CostModel(gpu_preset("h100-sxm"), fixed_clock(profile_preset("h100-sxm")));
}

// A collective op of `bytes` (the whole tensor), as plan_communication takes it.
inline model::Op collective_op(model::CollectiveKind kind, double bytes, model::CollectiveAlgorithm algorithm) {
  model::Op op;
  op.kind = model::OpKind::kCollective;
  op.collective = kind;
  op.tensor_bytes = bytes;
  op.algorithm = algorithm;
  return op;
}

// Time of one collective alone on an idle fabric, simulated.
inline double simulate_collective(const sim::CostModel& cost, int ranks, model::CollectiveKind kind, double bytes,
                                  model::CollectiveAlgorithm algorithm,
                                  model::Protocol protocol = model::Protocol::kAuto) {
  model::LayerGraph graph(ranks);
  model::ProgramBuilder b(graph, 2.0);
  b.set_collective_algorithm(algorithm);
  b.set_collective_protocol(protocol);
  b.collective("c", kind, bytes, "", {});
  return sim::simulate(graph, cost).makespan_s;
}

// The op of graph `g` named `name` (throws when there is none).
inline const model::Op& op_named(const model::LayerGraph& g, const std::string& name) {
  for (const model::Op& op : g.ops()) {
    if (op.name == name) return op;
  }
  throw std::runtime_error("no op named " + name);
}

// The span of graph `g`'s op `name` on GPU `rank` in `timeline`; a missing span is a test bug.
inline sim::OpSpan span_named(const sim::Timeline& timeline, const model::LayerGraph& g, const std::string& name,
                              int rank = 0) {
  const auto id = static_cast<model::OpId>(&op_named(g, name) - g.ops().data());
  for (const sim::OpSpan& span : timeline.spans) {
    if (span.op == id && span.rank == rank) return span;
  }
  throw std::logic_error("no span of " + name + " on GPU " + std::to_string(rank));
}

// Whether graph `g`'s ops `a` and `b` run at once on GPU 0 in `timeline`.
inline bool spans_overlap(const sim::Timeline& timeline, const model::LayerGraph& g, const std::string& a,
                          const std::string& b) {
  const sim::OpSpan x = span_named(timeline, g, a), y = span_named(timeline, g, b);
  return x.start_s < y.end_s && y.start_s < x.end_s;
}

inline model::Workload forward_workload(int64_t batch, int64_t seq_len, int64_t layers) {
  model::Workload w;
  w.batch = batch;
  w.seq_len = seq_len;
  w.layers = layers;
  return w;
}

// A training step (phase train) of `microbatches` micro-batches of batch x seq_len tokens.
inline model::Workload train_workload(int64_t batch, int64_t seq_len, int64_t layers,
                                      model::Recompute recompute = model::Recompute::kNone, int64_t microbatches = 1,
                                      bool optimizer = true) {
  model::Workload w = forward_workload(batch, seq_len, layers);
  w.phase = model::Phase::kTrain;
  w.recompute = recompute;
  w.microbatches = microbatches;
  w.optimizer = optimizer;
  return w;
}

inline model::Workload decode_workload(int64_t batch, int64_t context, int64_t layers) {
  model::Workload w;
  w.phase = model::Phase::kDecode;
  w.batch = batch;
  w.context_len = context;
  w.layers = layers;
  return w;
}

inline model::Variant variant(model::TpMode mode, int chunks = 1,
                              model::Transport transport = model::Transport::kCopyEngine,
                              model::ChunkOrder order = model::ChunkOrder::kRing, bool boundary = false) {
  model::Variant v;
  v.name = model::to_string(mode);
  v.mode = mode;
  v.chunks = chunks;
  v.transport = transport;
  v.order = order;
  v.boundary_overlap = boundary;
  return v;
}

// A one-layer training step of `seq_len` tokens per sequence split over `cp` context-parallel ranks `tp` GPUs apart.
inline model::Workload cp_workload(int64_t batch, int64_t seq_len, int cp, model::CpCommType comm, int tp) {
  model::Workload w = train_workload(batch, seq_len, 1);
  w.context_parallel.degree = cp;
  w.context_parallel.comm = comm;
  w.context_parallel.member_stride = tp;
  return w;
}

// Llama-3.1-8B's graph of `w` on `tp` GPUs under sequence parallelism.
inline model::LayerGraph llama8b_sp_graph(const model::Workload& w, int tp) {
  return model::build_layer_graph(model::load_model_preset("llama-3.1-8b"), w, tp, variant(model::TpMode::kSp));
}

// The graph of a scenario's first pass under its first variant.
inline model::LayerGraph scenario_step_graph(const model::Scenario& s) {
  return model::build_pass_graph(s.arch, s.workload, model::primary_pass(s.workload), s.parallelism.tp,
                                 s.variants.front());
}

// One decoder layer's parameters on one of 8 TP ranks, from Llama-3.1-8B's shapes: q, k, v, o and the three MLP
// matrices split 8 ways, the two RMSNorm weights whole.
inline double llama8b_layer_parameters_tp8() {
  const double hidden = 4096, ffn = 14336, kv = 8 * 128;
  return (hidden * (hidden + 2 * kv) + hidden * hidden + 3 * hidden * ffn) / 8 + 2 * hidden;
}

}  // namespace tpsim::test
