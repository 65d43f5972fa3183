// The pipeline step's critical path, walked back from the slowest stage's end over the schedule's timed passes.
#include "sim/report/pipeline_path.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>

namespace tpsim::sim {
namespace {

using model::PipelinePass;

// The pass whose output `step` (on model chunk `chunk`) reads, and the send between their stages (0: none).
struct Input {
  PipelinePass pass;
  int chunk;
  double send_s;
};

std::optional<Input> input_of(const model::PipelineStep& step, int chunk, int chunks,
                              const std::vector<double>& hop_s) {
  const auto hop = [&](int boundary) { return hop_s.empty() ? 0.0 : hop_s[static_cast<size_t>(boundary)]; };
  switch (step.pass) {
    case PipelinePass::kForward:
      if (chunk == 0) return std::nullopt;
      return Input{PipelinePass::kForward, chunk - 1, hop(chunk - 1)};
    case PipelinePass::kBackward:
      if (chunk + 1 == chunks) return Input{PipelinePass::kForward, chunk, 0.0};
      return Input{PipelinePass::kBackward, chunk + 1, hop(chunk)};
    case PipelinePass::kWeightGradient:
      return Input{PipelinePass::kBackward, chunk, 0.0};
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::vector<std::optional<PassInput>>> pipeline_inputs(const PipelineRun& p) {
  const int stages = static_cast<int>(p.spans.size());
  const model::PipelineScheduleKind kind = p.spec.schedule;
  const int chunks = stages * std::max(1, p.spec.virtual_stages);
  std::map<std::tuple<PipelinePass, int, int>, PassRef> where;  // (pass, micro-batch, model chunk)
  for (int stage = 0; stage < stages; ++stage) {
    const auto& spans = p.spans[static_cast<size_t>(stage)];
    for (size_t i = 0; i < spans.size(); ++i) {
      const model::PipelineStep& step = spans[i].step;
      where[{step.pass, step.microbatch, model::model_chunk_of(kind, stages, stage, step.virtual_stage)}] = {stage, i};
    }
  }
  std::vector<std::vector<std::optional<PassInput>>> inputs(p.spans.size());
  for (int stage = 0; stage < stages; ++stage) {
    for (const model::PipelineSpan& span : p.spans[static_cast<size_t>(stage)]) {
      const int chunk = model::model_chunk_of(kind, stages, stage, span.step.virtual_stage);
      std::optional<PassInput> found;
      if (const std::optional<Input> in = input_of(span.step, chunk, chunks, p.hop_s)) {
        const auto it = where.find({in->pass, span.step.microbatch, in->chunk});
        if (it != where.end()) found = PassInput{it->second, in->send_s};
      }
      inputs[static_cast<size_t>(stage)].push_back(found);
    }
  }
  return inputs;
}

std::vector<PathLink> pipeline_critical_path(const PipelineRun& p) {
  const int stages = static_cast<int>(p.spans.size());
  if (stages == 0 || p.stages.size() != p.spans.size()) return {};
  // The step ends with the slowest stage's optimizer, which (the stages' norms summed first) waits for the stage whose
  // last pass ends last: the path runs back from that pass.
  int last = -1;
  double total = 0;
  for (int stage = 0; stage < stages; ++stage) {
    const auto& spans = p.spans[static_cast<size_t>(stage)];
    total = std::max(total, p.stages[static_cast<size_t>(stage)].end_s);
    if (!spans.empty() && (last < 0 || spans.back().end_s >= p.spans[static_cast<size_t>(last)].back().end_s)) {
      last = stage;
    }
  }
  if (last < 0 || total <= 0) return {};
  const std::vector<std::vector<std::optional<PassInput>>> inputs = pipeline_inputs(p);
  const auto span_of = [&](const PassRef& r) -> const model::PipelineSpan& {
    return p.spans[static_cast<size_t>(r.stage)][r.index];
  };
  std::vector<PathLink> reversed;
  const auto add = [&](const std::string& name, const std::string& link_kind, int stage, double start, double end) {
    if (end > start) reversed.push_back({name, link_kind, stage, start, end, (end - start) / total});
  };
  std::optional<PassRef> at = PassRef{last, p.spans[static_cast<size_t>(last)].size() - 1};
  add("optimizer on stage " + std::to_string(last), "optimizer", last, span_of(*at).end_s, total);
  while (at) {
    const model::PipelineSpan& span = span_of(*at);
    const std::string stage = std::to_string(at->stage);
    add(to_string(span.step.pass) + " on stage " + stage, to_string(span.step.pass), at->stage, span.start_s,
        span.end_s);
    // What it waited for last: its input (and the send that brought it), or the previous pass on its stage; the
    // first pass waits from the step's start.
    std::optional<PassRef> previous;
    double previous_end = 0, send_s = 0;
    if (at->index > 0) {
      previous = PassRef{at->stage, at->index - 1};
      previous_end = span_of(*previous).end_s;
    }
    if (const std::optional<PassInput>& in = inputs[static_cast<size_t>(at->stage)][at->index]) {
      send_s = in->send_s;
      if (!previous || span_of(in->from).end_s >= previous_end) {
        previous = in->from;
        previous_end = span_of(in->from).end_s;
      }
    }
    const double sent = std::min(send_s, std::max(0.0, span.start_s - previous_end));
    add("wait on stage " + stage, "wait", at->stage, previous_end + sent, span.start_s);
    add("send to stage " + stage, "send", at->stage, previous_end, previous_end + sent);
    at = previous;
  }
  return {reversed.rbegin(), reversed.rend()};
}

}  // namespace tpsim::sim
