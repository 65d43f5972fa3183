// Times a pipeline schedule's passes over its stages from each chunk's costs.
#include "sim/engine/pipeline_timing.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

namespace tpsim::sim {

using model::bubble_fraction;
using model::ChunkCosts;
using model::model_chunk_of;
using model::PipelineCosts;
using model::PipelinePass;
using model::PipelineSchedule;
using model::PipelineSpan;
using model::PipelineStep;
using model::PipelineTiming;

PipelineTiming time_pipeline(const PipelineSchedule& schedule, const PipelineCosts& costs) {
  const int p = schedule.stages, v = schedule.virtual_stages, m = schedule.microbatches;
  const int chunks = p * v;
  if (costs.chunk.size() != static_cast<size_t>(chunks)) {
    throw std::logic_error("time_pipeline: " + std::to_string(costs.chunk.size()) + " chunk costs for " +
                           std::to_string(chunks) + " model chunks");
  }
  const bool split = splits_weight_gradient(schedule.kind);
  const auto pass_cost = [&](PipelinePass pass, int chunk) {
    const ChunkCosts& c = costs.chunk[chunk];
    switch (pass) {
      case PipelinePass::kForward:
        return c.forward_s;
      case PipelinePass::kWeightGradient:
        return c.weight_gradient_s;
      case PipelinePass::kBackward:
        break;
    }
    return split ? c.backward_s - c.weight_gradient_s : c.backward_s;
  };
  // The last pass of a micro-batch's backward: the one whose end has every weight gradient.
  const PipelinePass last_gradient = split ? PipelinePass::kWeightGradient : PipelinePass::kBackward;
  if (!costs.hop_s.empty() && costs.hop_s.size() + 1 != static_cast<size_t>(chunks)) {
    throw std::logic_error("time_pipeline: " + std::to_string(costs.hop_s.size()) + " hop times for " +
                           std::to_string(chunks) + " model chunks");
  }
  const auto hop = [&](int boundary) { return costs.hop_s.empty() ? 0.0 : costs.hop_s[boundary]; };
  // end[pass][microbatch][model chunk]; negative: not run yet.
  std::array<std::vector<std::vector<double>>, 3> end;
  end.fill(std::vector<std::vector<double>>(m, std::vector<double>(chunks, -1.0)));
  const auto ended = [&](PipelinePass pass, int mb, int chunk) { return end[static_cast<int>(pass)][mb][chunk]; };
  std::vector<size_t> next(p, 0);
  std::vector<double> free_at(p, 0.0);
  // An input from another stage moves once both ends are there: the producer's pass over, and the receiver done with
  // its previous pass (when PyTorch's and Megatron's 1F1B post the next receive, batched with their current send).
  const auto after = [&](double t, double delay, int stage) {
    return t < 0 ? t : (delay > 0 ? std::max(t, free_at[stage]) + delay : t);
  };
  PipelineTiming t;
  t.busy_s.assign(p, 0.0);
  t.end_s.assign(p, 0.0);
  t.spans.resize(p);
  size_t left = 0;
  for (const auto& stage : schedule.steps) left += stage.size();
  while (left > 0) {
    bool progressed = false;
    for (int stage = 0; stage < p; ++stage) {
      while (next[stage] < schedule.steps[stage].size()) {
        const PipelineStep& step = schedule.steps[stage][next[stage]];
        const int chunk = model_chunk_of(schedule.kind, p, stage, step.virtual_stage), mb = step.microbatch;
        double ready = 0;
        switch (step.pass) {
          case PipelinePass::kForward:
            ready = chunk > 0 ? after(ended(PipelinePass::kForward, mb, chunk - 1), hop(chunk - 1), stage) : 0.0;
            break;
          case PipelinePass::kBackward:
            ready = chunk + 1 < chunks ? after(ended(PipelinePass::kBackward, mb, chunk + 1), hop(chunk), stage)
                                       : ended(PipelinePass::kForward, mb, chunk);
            break;
          case PipelinePass::kWeightGradient:
            ready = ended(PipelinePass::kBackward, mb, chunk);
            break;
        }
        if (ready < 0) break;
        const ChunkCosts& c = costs.chunk[chunk];
        // The step's last backward runs beside the gradients' reduction.
        const double cost = pass_cost(step.pass, chunk) +
                            (step.pass == PipelinePass::kBackward && mb + 1 == m ? c.synced_backward_extra_s : 0.0);
        const double start = std::max(free_at[stage], ready);
        // The step's first forward waits for its gathered parameters (a stall, not work).
        const double finish = step.pass == PipelinePass::kForward && mb == 0 && c.gathered_forward_s > 0
                                  ? std::max(start + cost, c.gathered_forward_s)
                                  : start + cost;
        free_at[stage] = end[static_cast<int>(step.pass)][mb][chunk] = finish;
        t.busy_s[stage] += cost;
        t.end_s[stage] = std::max(t.end_s[stage], free_at[stage]);
        if (step.pass == last_gradient && mb + 1 == m) {
          t.end_s[stage] = std::max(t.end_s[stage], free_at[stage] + c.reduce_tail_s);
        }
        t.spans[stage].push_back(PipelineSpan{step, start, free_at[stage]});
        t.step_s = std::max(t.step_s, free_at[stage]);
        ++next[stage];
        --left;
        progressed = true;
      }
    }
    if (!progressed) throw std::logic_error("pipeline schedule " + to_string(schedule.kind) + " deadlocks");
  }
  t.bubble_fraction = bubble_fraction(t.busy_s, t.step_s);
  return t;
}

PipelineTiming time_pipeline(const PipelineSchedule& schedule, const ChunkCosts& costs) {
  PipelineCosts uniform;
  uniform.chunk.assign(static_cast<size_t>(schedule.stages) * static_cast<size_t>(schedule.virtual_stages), costs);
  return time_pipeline(schedule, uniform);
}

}  // namespace tpsim::sim
