// The SM clock a program runs at when the power limiter averages the board's draw over a window longer than
// its kernels: compute-bound kernels draw more than the limit at the profile's clock, memory-bound kernels,
// transfers and gaps draw less, and the limiter holds the program's mean at the limit.
//
// The window is the simulated program (a pass, a pipeline chunk, a step's end): a pipeline's bubbles between chunks
// are not in it. Ignores: the limiter's own time constant (a program shorter than it would run at the clock of what
// ran before), temperature, and clock-dependent draw of memory-bound kernels.
#pragma once

#include <functional>

#include "model/graph/layer_graph.hpp"
#include "sim/cost/cost_model.hpp"
#include "sim/cost/power_limit.hpp"
#include "sim/engine/timeline.hpp"

namespace tpsim::sim {

// What `timeline` (simulated with `cost`) draws on its GPUs: every rank's span is the program's makespan; the time
// any compute-bound kernel ran, its intervals merged; memory-bound kernels' HBM bytes and the bytes each comm op
// moves each way through the GPU's port (plus its FIFO's extra HBM accesses) at their energies per bit.
WindowDraw window_draw(const model::LayerGraph& graph, const CostModel& cost, const Timeline& timeline);

// Runs `simulate_at` at the clock the program's own draw leaves under the limit: first at the back-to-back clock
// (back_to_back_clock_ratio: the lowest a window without transfers beside its compute can give), then at
// window_clock_ratio of what ran, until the clock moves by at most kWindowClockTolerance (at most kMaxWindowSimulations
// runs). The timeline's clock_ratio says which clock it ran at. One run where the program has no compute-bound kernel
// (the clock changes nothing), or without a windowed profile (power.sustained_ratio): at `cost`'s clock.
Timeline simulate_at_window_clock(const model::LayerGraph& graph, const CostModel& cost,
                                  const std::function<Timeline(const CostModel&)>& simulate_at);

// A clock that moves less than this between runs is the program's: its compute-bound kernels' times within 0.2%.
inline constexpr double kWindowClockTolerance = 0.002;
inline constexpr int kMaxWindowSimulations = 4;

}  // namespace tpsim::sim
