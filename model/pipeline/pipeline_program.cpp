// Builds a whole pipelined step's program from its chunks' one-micro-batch programs and the schedule.
#include "model/pipeline/pipeline_program.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

#include "model/layers/fp8_recipe.hpp"

namespace tpsim::model {
namespace {

// The sends between stages: on a stream no chunk program uses (op lists' comm2), unordered among themselves.
const Stream kSendStream = *stream_named("comm2");

bool is_compute_stream(Stream stream) {
  return stream == Stream::kCompute || stream == Stream::kCompute2;
}

// The pass each op of a chunk's program belongs to: its forward's ops, its backward's; under a zero-bubble schedule the
// weight-gradient pass takes the weight-gradient GEMMs, what reads them, and what only they read.
std::vector<PipelinePass> passes_of(const LayerGraph& program, bool split_weight_gradient) {
  std::vector<PipelinePass> pass(program.size(), PipelinePass::kBackward);
  for (OpId id = 0; id < program.size(); ++id) {
    const Op& op = program.op(id);
    if (op.stage == OpStage::kForward) {
      pass[id] = PipelinePass::kForward;
      continue;
    }
    if (!split_weight_gradient) continue;
    bool weight = op.kind == OpKind::kGemm && gemm_role_of(op.name) == GemmRole::kWeightGradient;
    for (const Dep& dep : op.deps) {
      weight = weight || (dep.data && pass[dep.op] == PipelinePass::kWeightGradient);
    }
    if (weight) pass[id] = PipelinePass::kWeightGradient;
  }
  if (!split_weight_gradient) return pass;
  // And what only they read (sequence parallelism's re-gathered layer inputs): deferred with them.
  const std::vector<std::vector<OpId>> readers = program.consumers();
  for (OpId id = static_cast<OpId>(program.size()); id-- > 0;) {
    if (pass[id] != PipelinePass::kBackward || readers[id].empty()) continue;
    if (std::all_of(readers[id].begin(), readers[id].end(),
                    [&](OpId reader) { return pass[reader] == PipelinePass::kWeightGradient; })) {
      pass[id] = PipelinePass::kWeightGradient;
    }
  }
  return pass;
}

// Per op of a chunk's program: whether it belongs to the replicas' synchronisation, which runs in the step's first
// forward and last backward only: the data group's collectives, and the kernels on their streams that only they read
// (FSDP's fp8 casts of its shards before the gathers).
std::vector<bool> data_sync_of(const LayerGraph& program) {
  std::vector<bool> sync(program.size(), false);
  const std::vector<std::vector<OpId>> readers = program.consumers();
  for (OpId id = static_cast<OpId>(program.size()); id-- > 0;) {
    const Op& op = program.op(id);
    const bool feeds_sync = is_kernel(op.kind) && !is_compute_stream(op.stream) && !readers[id].empty() &&
                            std::all_of(readers[id].begin(), readers[id].end(), [&](OpId r) { return sync[r]; });
    sync[id] = op.group == CommGroup::kData || feeds_sync;
  }
  return sync;
}

// Per op of a chunk's program: whether it reads its pass's input, having no dependency on another op of its pass but
// the replicas' synchronisation (FSDP's gathers, whose readers read the input too), followed through those.
std::vector<bool> pass_inputs_of(const LayerGraph& program, const std::vector<PipelinePass>& pass,
                                 const std::vector<bool>& sync) {
  std::vector<bool> reads_input(program.size(), false);
  // Per synchronising op: whether it follows (through others of its kind) an op of its own pass.
  std::vector<bool> follows_pass(program.size(), false);
  for (OpId id = 0; id < program.size(); ++id) {
    const Op& op = program.op(id);
    bool follows = false;
    for (const Dep& dep : op.deps) {
      const bool through = sync[dep.op];
      follows = follows || (pass[dep.op] == pass[id] && (!through || follows_pass[dep.op]));
    }
    if (sync[id]) {
      follows_pass[id] = follows;
    } else {
      reads_input[id] = !follows;
    }
  }
  return reads_input;
}

class ProgramWriter {
 public:
  ProgramWriter(const PipelineSchedule& schedule, const std::vector<const LayerGraph*>& chunks, double send_bytes,
                int stage_stride)
      : schedule_(schedule), chunks_(chunks), send_bytes_(send_bytes), stage_stride_(stage_stride) {
    const bool split = splits_weight_gradient(schedule.kind);
    for (const LayerGraph* chunk : chunks) {
      pass_of_.push_back(passes_of(*chunk, split));
      sync_.push_back(data_sync_of(*chunk));
      reads_input_.push_back(pass_inputs_of(*chunk, pass_of_.back(), sync_.back()));
    }
    program_.graph = LayerGraph(chunks.front()->tp());
    program_.passes.resize(static_cast<size_t>(schedule.stages));
    for (int s = 0; s < schedule.stages; ++s) program_.passes[s].resize(schedule.steps[s].size());
    last_.resize(static_cast<size_t>(schedule.stages));
  }

  void write(int stage, size_t index) {
    const PipelineStep& step = schedule_.steps[stage][index];
    const int c = model_chunk_of(schedule_.kind, schedule_.stages, stage, step.virtual_stage);
    const int mb = step.microbatch;
    const int chunks = static_cast<int>(chunks_.size());
    std::vector<Dep> input;
    if (step.pass == PipelinePass::kForward && c > 0) input = arrive(c - 1, mb, PipelinePass::kForward, stage);
    if (step.pass == PipelinePass::kBackward && c + 1 < chunks) {
      input = arrive(c + 1, mb, PipelinePass::kBackward, stage);
    }
    const LayerGraph& chunk = *chunks_[c];
    const std::string prefix = "c" + std::to_string(c) + ".mb" + std::to_string(mb) + ".";
    Copies& copies = copies_[{c, mb}];
    copies.id.resize(chunk.size(), -1);
    const auto begin = static_cast<OpId>(program_.graph.size());
    for (OpId t = 0; t < chunk.size(); ++t) {
      if (pass_of_[c][t] != step.pass) continue;
      const Op& original = chunk.op(t);
      std::vector<Dep> deps = resolve(c, original, copies);
      const bool sync = sync_[c][t];
      if (sync && !runs_data_collective(original, mb)) {
        copies.instead[t] = std::move(deps);  // the micro-batch runs without it: its readers follow what it followed
        continue;
      }
      if (reads_input_[c][t]) deps.insert(deps.end(), input.begin(), input.end());
      if (sync && original.stage == OpStage::kForward) {
        // The step's first forward: FSDP gathers every parameter the stage keeps for the step from the start, one
        // after another on their stream, not one unit ahead of the compute (as the schedule's timing assumes).
        std::erase_if(deps, [&](const Dep& d) { return d.op >= synchronises_.size() || !synchronises_[d.op]; });
      }
      Op op = original;
      op.name = prefix + original.name;
      op.pipeline_stage = stage;
      std::optional<OpId>& previous = last_[stage][static_cast<size_t>(op.stream)];
      if (previous) deps.push_back(Dep{*previous, 0, false});
      op.deps = std::move(deps);
      const OpId id = program_.graph.add(std::move(op));
      synchronises_.resize(program_.graph.size(), false);
      synchronises_[id] = sync;
      copies.id[t] = id;
      previous = id;
      if (is_compute_stream(original.stream)) tails_[{c, mb, step.pass}][static_cast<size_t>(original.stream)] = id;
    }
    program_.passes[stage][index] = {begin, static_cast<OpId>(program_.graph.size())};
  }

  PipelineProgram take() { return std::move(program_); }

 private:
  // One chunk's program copied for one micro-batch: each op's copy (-1: not yet, or not run), and for the data
  // group's collectives this micro-batch leaves out, what they depended on.
  struct Copies {
    std::vector<int64_t> id;
    std::map<OpId, std::vector<Dep>> instead;
  };

  // The step's first forward gathers (FSDP), its last backward reduces the gradients (and, resharded, gathers again).
  bool runs_data_collective(const Op& op, int mb) const {
    return op.stage == OpStage::kForward ? mb == 0 : mb + 1 == schedule_.microbatches;
  }

  // `original`'s dependencies on the copies; one on an op of a later pass (a zero-bubble backward following a weight
  // gradient on its stream) is left to the stage's stream order, which runs that pass later.
  std::vector<Dep> resolve(int c, const Op& original, const Copies& copies) const {
    std::vector<Dep> deps;
    for (const Dep& dep : original.deps) {
      if (copies.id[dep.op] >= 0) {
        deps.push_back(Dep{static_cast<OpId>(copies.id[dep.op]), dep.rank_offset, dep.data});
      } else if (const auto left_out = copies.instead.find(dep.op); left_out != copies.instead.end()) {
        for (const Dep& before : left_out->second) deps.push_back(Dep{before.op, before.rank_offset, false});
      } else if (dep.data) {
        throw std::logic_error("pipeline program: " + original.name + " of chunk " + std::to_string(c) +
                               " reads an op of a pass not yet issued");
      }
    }
    return deps;
  }

  // The dependencies that bring pass (producer's chunk, micro-batch, pass)'s output to `stage`: its last compute ops
  // where the stage is the producer's, else a send from the producer's stage.
  std::vector<Dep> arrive(int producer, int mb, PipelinePass pass, int stage) {
    const auto found = tails_.find({producer, mb, pass});
    if (found == tails_.end()) {
      throw std::logic_error("pipeline program: chunk " + std::to_string(producer) + "'s pass of micro-batch " +
                             std::to_string(mb) + " read before it was issued");
    }
    std::vector<Dep> output;
    for (const std::optional<OpId>& tail : found->second) {
      if (tail) output.push_back(Dep{*tail, 0, true});
    }
    const int from = stage_of_chunk(schedule_.kind, schedule_.stages, producer);
    if (from == stage) return output;
    Op send;
    send.name = std::string(pass == PipelinePass::kForward ? "pp.send.activation" : "pp.send.gradient") + ".c" +
                std::to_string(producer) + ".mb" + std::to_string(mb);
    send.kind = OpKind::kCollective;
    send.collective = CollectiveKind::kSendRecv;
    send.group = CommGroup::kPipeline;
    send.group_size = 2;
    send.group_stride = std::abs(stage - from) * stage_stride_;
    send.tensor_bytes = send.output_bytes = send_bytes_;
    send.stream = kSendStream;
    send.stage = pass == PipelinePass::kForward ? OpStage::kForward : OpStage::kBackward;
    send.module = -1;
    send.pipeline_stage = from;
    send.receiving_stage = stage;
    send.shape = "activation";
    send.deps = output;  // on the sender's GPUs
    // On the receiver's: posted when its compute stream reaches the reading pass.
    if (const std::optional<OpId> reached = last_[stage][static_cast<size_t>(Stream::kCompute)]) {
      send.deps.push_back(Dep{*reached, 0, false});
    }
    return {Dep{program_.graph.add(std::move(send)), 0, true}};
  }

  const PipelineSchedule& schedule_;
  const std::vector<const LayerGraph*>& chunks_;
  double send_bytes_;
  int stage_stride_;
  std::vector<std::vector<PipelinePass>> pass_of_;  // per chunk, per op
  std::vector<std::vector<bool>> reads_input_;      // per chunk, per op: pass_inputs_of
  std::vector<std::vector<bool>> sync_;             // per chunk, per op: data_sync_of
  std::vector<bool> synchronises_;                  // per op of the step: a copy of a synchronising op
  PipelineProgram program_;
  std::vector<std::array<std::optional<OpId>, kStreamCount>> last_;  // per stage: the last op issued per stream
  std::map<std::pair<int, int>, Copies> copies_;                     // per (chunk, micro-batch)
  // Per (chunk, micro-batch, pass): its last op on each compute stream (its output).
  std::map<std::tuple<int, int, PipelinePass>, std::array<std::optional<OpId>, kStreamCount>> tails_;
};

}  // namespace

PipelineProgram build_pipeline_program(const PipelineSchedule& schedule,
                                       const std::vector<const LayerGraph*>& chunk_programs,
                                       const std::vector<std::vector<PipelineSpan>>& order, double send_bytes,
                                       int stage_stride) {
  // Every step, by when it started (ties: by stage, then in the stage's order).
  std::vector<std::tuple<double, int, size_t>> steps;
  for (int stage = 0; stage < schedule.stages; ++stage) {
    for (size_t i = 0; i < schedule.steps[stage].size(); ++i) steps.emplace_back(order[stage][i].start_s, stage, i);
  }
  std::stable_sort(steps.begin(), steps.end());
  ProgramWriter writer(schedule, chunk_programs, send_bytes, stage_stride);
  for (const auto& [start, stage, index] : steps) writer.write(stage, index);
  return writer.take();
}

}  // namespace tpsim::model
