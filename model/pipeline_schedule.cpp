// Builds GPipe, 1F1B and interleaved 1F1B step lists and times them with free transfers.
#include "model/pipeline_schedule.hpp"

#include <algorithm>
#include <stdexcept>

#include "model/input_error.hpp"

namespace tpsim::model {
namespace {

// The micro-batch and virtual stage of a stage's k-th forward (or backward) under the interleaved
// schedule: micro-batches run in groups of `stages`, each group through every chunk in turn (backwards
// through the chunks in reverse).
PipelineStep interleaved_step(PipelinePass pass, int k, int stages, int virtual_stages) {
  const int group = k / (stages * virtual_stages);
  const int within = k % (stages * virtual_stages);
  const int chunk = within / stages;
  PipelineStep step;
  step.pass = pass;
  step.microbatch = group * stages + within % stages;
  step.virtual_stage = pass == PipelinePass::kForward ? chunk : virtual_stages - 1 - chunk;
  return step;
}

// Warm-up forwards, then a forward and a backward in turn, then the remaining backwards: 1F1B over
// `passes` forward and backward passes per stage, the k-th of each given by `nth`.
template <typename Nth>
std::vector<PipelineStep> one_forward_one_backward(int warmup, int passes, const Nth& nth) {
  std::vector<PipelineStep> out;
  out.reserve(2 * static_cast<size_t>(passes));
  for (int k = 0; k < warmup; ++k) out.push_back(nth(PipelinePass::kForward, k));
  for (int k = 0; k < passes - warmup; ++k) {
    out.push_back(nth(PipelinePass::kForward, warmup + k));
    out.push_back(nth(PipelinePass::kBackward, k));
  }
  for (int k = passes - warmup; k < passes; ++k) out.push_back(nth(PipelinePass::kBackward, k));
  return out;
}

}  // namespace

std::string to_string(PipelineScheduleKind kind) {
  switch (kind) {
    case PipelineScheduleKind::kGpipe:
      return "gpipe";
    case PipelineScheduleKind::kInterleaved:
      return "interleaved";
    case PipelineScheduleKind::kOneFOneB:
      break;
  }
  return "1f1b";
}

std::string pipeline_schedule_problem(PipelineScheduleKind kind, int stages, int microbatches, int virtual_stages) {
  if (stages < 1 || microbatches < 1 || virtual_stages < 1) {
    return "pipeline stages, micro-batches and virtual stages must be at least 1";
  }
  if (kind != PipelineScheduleKind::kInterleaved) {
    return virtual_stages == 1 ? "" : to_string(kind) + " runs one model chunk per stage: virtual_stages must be 1";
  }
  if (virtual_stages < 2) return "interleaved needs virtual_stages of 2 or more (1 is 1f1b)";
  if (microbatches % stages != 0) {
    return "interleaved runs micro-batches in groups of the " + std::to_string(stages) +
           " stages: micro-batches must be a multiple of " + std::to_string(stages);
  }
  return "";
}

PipelineSchedule make_pipeline_schedule(PipelineScheduleKind kind, int stages, int microbatches, int virtual_stages) {
  if (const std::string why = pipeline_schedule_problem(kind, stages, microbatches, virtual_stages); !why.empty()) {
    throw InputError(why);
  }
  PipelineSchedule s{kind, stages, microbatches, virtual_stages, {}};
  for (int stage = 0; stage < stages; ++stage) {
    const auto plain = [](PipelinePass pass, int k) { return PipelineStep{pass, k, 0}; };
    switch (kind) {
      case PipelineScheduleKind::kGpipe:
        s.steps.push_back(one_forward_one_backward(microbatches, microbatches, plain));
        break;
      case PipelineScheduleKind::kOneFOneB:
        s.steps.push_back(one_forward_one_backward(std::min(stages - stage - 1, microbatches), microbatches, plain));
        break;
      case PipelineScheduleKind::kInterleaved: {
        // Megatron-LM's warm-up: two forwards per later stage, and a whole group through the other chunks.
        const int passes = microbatches * virtual_stages;
        const int warmup = std::min((stages - stage - 1) * 2 + (virtual_stages - 1) * stages, passes);
        s.steps.push_back(one_forward_one_backward(warmup, passes, [&](PipelinePass pass, int k) {
          return interleaved_step(pass, k, stages, virtual_stages);
        }));
        break;
      }
    }
  }
  return s;
}

PipelineTiming time_pipeline(const PipelineSchedule& schedule, const ChunkCosts& costs) {
  const int p = schedule.stages, v = schedule.virtual_stages, m = schedule.microbatches;
  const int chunks = p * v;
  // end[pass][microbatch][model chunk]; negative: not run yet.
  std::vector<std::vector<std::vector<double>>> end(
      2, std::vector<std::vector<double>>(m, std::vector<double>(chunks, -1.0)));
  std::vector<size_t> next(p, 0);
  std::vector<double> free_at(p, 0.0);
  PipelineTiming t;
  t.busy_s.assign(p, 0.0);
  size_t left = 0;
  for (const auto& stage : schedule.steps) left += stage.size();
  while (left > 0) {
    bool progressed = false;
    for (int stage = 0; stage < p; ++stage) {
      while (next[stage] < schedule.steps[stage].size()) {
        const PipelineStep& step = schedule.steps[stage][next[stage]];
        const int chunk = step.virtual_stage * p + stage;
        const bool forward = step.pass == PipelinePass::kForward;
        double ready = 0;
        if (forward && chunk > 0) {
          ready = end[0][step.microbatch][chunk - 1];
        } else if (!forward) {
          ready = chunk + 1 < chunks ? end[1][step.microbatch][chunk + 1] : end[0][step.microbatch][chunk];
        }
        if (ready < 0) break;
        const double cost = forward ? costs.forward_s : costs.backward_s;
        const double start = std::max(free_at[stage], ready);
        free_at[stage] = end[forward ? 0 : 1][step.microbatch][chunk] = start + cost;
        t.busy_s[stage] += cost;
        t.step_s = std::max(t.step_s, free_at[stage]);
        ++next[stage];
        --left;
        progressed = true;
      }
    }
    if (!progressed) throw std::logic_error("pipeline schedule " + to_string(schedule.kind) + " deadlocks");
  }
  double busy = 0;
  for (const double b : t.busy_s) busy += b;
  t.bubble_fraction = t.step_s > 0 ? 1.0 - busy / (p * t.step_s) : 0.0;
  return t;
}

}  // namespace tpsim::model
