// A lower bound on a training step's time without simulating it (what `tpsim plan` ranks candidates by before it
// simulates them): each program the step would simulate bounded by sim/engine/program_bound.hpp, and under a pipeline
// the schedule's timing (sim/engine/pipeline_timing.hpp) run with those bounds as its pass costs.
//
// Why the pipeline's part is a bound: for a schedule whose order is fixed (every kind but zb-v, whose order follows
// the costs), the timing is a max-plus expression of its inputs: each pass starts at the latest of its stage's previous
// end and its input's end (plus the hop's time), and ends its cost later (or at the gathered forward's end, a max);
// stages end at their last pass (or its reduction's tail), the step at the latest of them. Maxima and sums never
// decrease when an input grows, so costs no larger than the simulated ones give a step no longer than the simulated
// one. The bounds leave out what only lengthens a step: the hops, the data group's gathers, its reductions' extra and
// tails, the tied embeddings' and the gradient norms' all-reduces; each stage's optimizer runs after its passes end.
// Under the power limiter's window the clock is not known before simulating: the step is bounded at every clock by the
// larger of its path there and what the window's energy allows, and the least over the clocks taken (step_bound.cpp).
#pragma once

#include <optional>

#include "model/scenario.hpp"

namespace tpsim::sim {

struct StepBound {
  double step_s = 0;       // the least step time
  double model_flops = 0;  // the step's model FLOPs per GPU, as `tpsim run` counts them for its MFU (no simulation)
};

// The least step time `tpsim run` can give the scenario's first variant (chunks: auto: the least over its chunk
// counts), with the step's model FLOPs per GPU; nullopt where none is told here: not a training step, a zb-v schedule,
// a program the engine's bounds do not cover (sim/engine/program_bound.hpp). Located errors as `tpsim run`'s for a
// scenario it refuses.
std::optional<StepBound> step_lower_bound(const model::Scenario& scenario);

}  // namespace tpsim::sim
