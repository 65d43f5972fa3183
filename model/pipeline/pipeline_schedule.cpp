// Builds GPipe, 1F1B, interleaved 1F1B, ZB-H1 and ZB-V step lists (sim/engine/pipeline_timing.cpp times them).
#include "model/pipeline/pipeline_schedule.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include "base/input_error.hpp"
#include "model/pipeline/zero_bubble_v.hpp"

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

// ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR'24; PyTorch's ZB1P): 1F1B's warm-up and order
// with each backward split, and stage s running each weight-gradient pass s backwards late. The input
// gradients travel back to stage 0 without waiting behind weight gradients, the later stages fill their
// cool-down with the weight gradients they held back, and every stage holds at most p micro-batches'
// activations, 1F1B's peak on its first stage.
std::vector<PipelineStep> zero_bubble_h1(int stage, int stages, int microbatches) {
  std::vector<PipelineStep> out;
  out.reserve(3 * static_cast<size_t>(microbatches));
  int forwards = 0, backwards = 0, weights = 0;
  const auto backward_then_weight = [&] {
    out.push_back({PipelinePass::kBackward, backwards++, 0});
    if (backwards > stage) out.push_back({PipelinePass::kWeightGradient, weights++, 0});
  };
  const int warmup = std::min(stages - stage - 1, microbatches);
  while (forwards < warmup) out.push_back({PipelinePass::kForward, forwards++, 0});
  while (forwards < microbatches) {
    out.push_back({PipelinePass::kForward, forwards++, 0});
    backward_then_weight();
  }
  while (backwards < microbatches) backward_then_weight();
  while (weights < microbatches) out.push_back({PipelinePass::kWeightGradient, weights++, 0});
  return out;
}

}  // namespace

std::string to_string(PipelineScheduleKind kind) {
  return std::string(name_of(kPipelineScheduleNames, kind));
}

std::string to_string(PipelinePass pass) {
  return std::string(name_of(kPipelinePassNames, pass));
}

bool splits_weight_gradient(PipelineScheduleKind kind) {
  return kind == PipelineScheduleKind::kZeroBubbleH1 || kind == PipelineScheduleKind::kZeroBubbleV;
}

int model_chunk_of(PipelineScheduleKind kind, int stages, int stage, int virtual_stage) {
  if (kind == PipelineScheduleKind::kZeroBubbleV && virtual_stage == 1) return 2 * stages - 1 - stage;
  return virtual_stage * stages + stage;
}

int stage_of_chunk(PipelineScheduleKind kind, int stages, int chunk) {
  if (kind == PipelineScheduleKind::kZeroBubbleV && chunk >= stages) return 2 * stages - 1 - chunk;
  return chunk % stages;
}

std::string pipeline_schedule_problem(PipelineScheduleKind kind, int stages, int microbatches, int virtual_stages) {
  if (stages < 1 || microbatches < 1 || virtual_stages < 1) {
    return "pipeline stages, micro-batches and virtual stages must be at least 1";
  }
  if (kind == PipelineScheduleKind::kZeroBubbleV) {
    return virtual_stages == 2 ? "" : "zb-v runs two model chunks per stage in a V: virtual_stages must be 2";
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
  PipelineCosts unit;
  ChunkCosts one;
  one.forward_s = 1;
  one.backward_s = 2;
  one.weight_gradient_s = 1;
  unit.chunk.assign(static_cast<size_t>(std::max(stages, 0)) * static_cast<size_t>(std::max(virtual_stages, 0)), one);
  return make_pipeline_schedule(kind, stages, microbatches, virtual_stages, unit);
}

PipelineSchedule make_pipeline_schedule(PipelineScheduleKind kind, int stages, int microbatches, int virtual_stages,
                                        const PipelineCosts& costs) {
  if (const std::string why = pipeline_schedule_problem(kind, stages, microbatches, virtual_stages); !why.empty()) {
    throw InputError(why);
  }
  PipelineSchedule s{kind, stages, microbatches, virtual_stages, {}};
  if (kind == PipelineScheduleKind::kZeroBubbleV) {
    s.steps = zero_bubble_v_steps(stages, microbatches, costs);
    return s;
  }
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
      case PipelineScheduleKind::kZeroBubbleH1:
        s.steps.push_back(zero_bubble_h1(stage, stages, microbatches));
        break;
      case PipelineScheduleKind::kZeroBubbleV:
        break;  // above
    }
  }
  return s;
}

std::vector<HeldPeak> peak_held(const PipelineSchedule& schedule, const std::vector<std::vector<double>>& saved,
                                const std::vector<std::vector<double>>& gradients) {
  // The pass that reads a micro-batch's layer inputs last frees them; it computes the weight gradients too.
  const PipelinePass frees =
      splits_weight_gradient(schedule.kind) ? PipelinePass::kWeightGradient : PipelinePass::kBackward;
  std::vector<HeldPeak> peaks;
  for (size_t s = 0; s < schedule.steps.size(); ++s) {
    HeldPeak now, peak;
    const auto note = [&] {
      if (now.activation_bytes + now.gradient_bytes > peak.activation_bytes + peak.gradient_bytes) peak = now;
    };
    std::vector<int> gradient_passes(saved.at(s).size(), 0);
    for (const PipelineStep& step : schedule.steps[s]) {
      const auto v = static_cast<size_t>(step.virtual_stage);
      if (step.pass == PipelinePass::kForward) now.activation_bytes += saved.at(s).at(v);
      note();  // after a forward, or as a backward starts (its micro-batch's inputs still held)
      if (step.pass != frees) continue;
      now.activation_bytes -= saved.at(s).at(v);
      const double accumulated = gradients.empty() ? 0.0 : gradients.at(s).at(v);
      const int done = ++gradient_passes[v];
      if (done == 1) now.gradient_bytes += accumulated;
      if (done == schedule.microbatches) now.gradient_bytes -= accumulated;
      note();
    }
    peaks.push_back(peak);
  }
  return peaks;
}

std::vector<double> peak_held_bytes(const PipelineSchedule& schedule, const std::vector<std::vector<double>>& saved) {
  std::vector<double> peaks;
  for (const HeldPeak& held : peak_held(schedule, saved, {})) peaks.push_back(held.activation_bytes);
  return peaks;
}

std::vector<int> peak_in_flight(const PipelineSchedule& schedule) {
  const std::vector<std::vector<double>> one_each(
      static_cast<size_t>(schedule.stages), std::vector<double>(static_cast<size_t>(schedule.virtual_stages), 1.0));
  std::vector<int> peaks;
  for (const double held : peak_held_bytes(schedule, one_each)) peaks.push_back(static_cast<int>(std::lround(held)));
  return peaks;
}

double bubble_fraction(const std::vector<double>& busy_s, double step_s) {
  double busy = 0;
  for (const double b : busy_s) busy += b;
  return step_s > 0 ? 1.0 - busy / (static_cast<double>(busy_s.size()) * step_s) : 0.0;
}

}  // namespace tpsim::model
