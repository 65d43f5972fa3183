// The SM clock a program runs at when the power limiter averages the board's draw over a window longer than
// its kernels: compute-bound kernels draw more than the limit at the profile's clock, memory-bound kernels,
// transfers and gaps draw less, and the limiter holds the program's mean at the limit.
//
// The window is the simulated program (a pass, a training step), or under a pipeline its step's busy time
// (sim/run/pipeline_run.cpp): the bubbles are not in it. Ignores: the limiter's own time constant (a program shorter
// than it would run at the clock of what ran before), temperature, and clock-dependent draw of memory-bound kernels.
#pragma once

#include <cmath>
#include <functional>
#include <type_traits>
#include <utility>

#include "model/graph/layer_graph.hpp"
#include "sim/cost/cost_model.hpp"
#include "sim/cost/power_limit.hpp"
#include "sim/engine/timeline.hpp"

namespace tpsim::sim {

// What one run of a comm op draws above idle on each of its GPUs: the bytes `plan` moves each way through the GPU's
// port (its steps' messages to every peer it sends to, or an outside group's link bytes), plus its FIFO's extra HBM
// accesses.
double comm_energy_J(const CommPlan& plan, const CostModel& cost);

// What `timeline` (simulated with `cost`) draws on its GPUs: every rank's span is the program's makespan; the time
// any compute-bound kernel ran, its intervals merged; memory-bound kernels' HBM bytes and the bytes each comm op
// moves each way through the GPU's port (plus its FIFO's extra HBM accesses) at their energies per bit.
WindowDraw window_draw(const model::LayerGraph& graph, const CostModel& cost, const Timeline& timeline);

// Runs `simulate_at` at the clock the program's own draw leaves under the limit (at_window_clock, below); the
// timeline's clock_ratio says which. Without a windowed profile (power.sustained_ratio): one run at `cost`'s clock.
Timeline simulate_at_window_clock(const model::LayerGraph& graph, const CostModel& cost,
                                  const std::function<Timeline(const CostModel&)>& simulate_at);

// A clock that moves less than this between runs is the program's: its compute-bound kernels' times within 0.2%.
inline constexpr double kWindowClockTolerance = 0.002;
// A bound on the runs, not a measured count: window_clock_ratio's step already scales the compute time with the
// clock, so the programs tried (the traced layer, a pipelined FSDP step) settle in two; the rest leave room for a
// program whose overlap changes with the clock, and the last run stands.
inline constexpr int kMaxWindowSimulations = 4;

// Whether a program whose compute-bound kernels take `compute_s` at the short benchmarks' clock, and whose
// memory-bound kernels take `memory_s` and draw `memory_J` through HBM, likely leaves the limit unbound at that
// clock: their mean draw over the two times summed (one stream) at most the limit. A first guess for the fixed point
// below (a decode step's few small GEMMs among its memory-bound kernels), never its answer.
bool likely_unbound(const CostModel& cost, double compute_s, double memory_s, double memory_J);

// The same guess for a program: its kernels costed once at `cost`'s clock.
bool likely_unbound(const model::LayerGraph& graph, const CostModel& cost);

// A search that needs only a lower bound on the step a run would give (tpsim plan's refinement, docs/plan.md): while
// one is installed in a thread, the first window loop there (at_window_clock) that would run its programs again after
// its run at the back-to-back clock ends the run instead, throwing FirstRunBound with the least time its last run can
// take (first_run_lower_s). One loop fires it; a run whose first loop needs no second run completes. Not nested.
class FirstRunProbe {
 public:
  FirstRunProbe();
  ~FirstRunProbe();
  FirstRunProbe(const FirstRunProbe&) = delete;
  FirstRunProbe& operator=(const FirstRunProbe&) = delete;

  // Whether a probe is installed in this thread and has not fired.
  static bool armed();
  // Disarms this thread's probe and throws FirstRunBound{lower_s}.
  [[noreturn]] static void fire(double lower_s);
};

// What a fired probe throws: not a std::exception, so that no handler of errors takes it for one.
struct FirstRunBound {
  double step_s = 0;
};

// The least time the window loop can end with, from its run at the back-to-back clock `ratio` (`time_s`, which drew
// `draw`) and its run at clock 1 where it ran one first (`at_clock_one_s`, else 0): no less than the latter, and no
// less than `time_s` x ratio / r at the highest clock r it can end at, held_span_clock_ratio of the draw (or `ratio`
// where that is lower). Assumes what the engine's runs show (a test checks it on the plans' candidates): a run at a
// higher clock has no op longer, and none shorter than its time at `ratio` scaled by ratio / clock.
double first_run_lower_s(const CostModel& cost, const WindowDraw& draw, double ratio, double time_s,
                         double at_clock_one_s);

// The fixed point of a window's clock: `run_at(cost at a clock, WindowDraw& draw)` runs the window's programs at that
// clock and sets what they draw. First at the back-to-back clock (back_to_back_clock_ratio: the lowest a window
// without transfers beside its compute can give), then at window_clock_ratio of what ran, until the clock moves by at
// most kWindowClockTolerance, the programs hold no compute-bound kernel (the clock changes nothing; the clock their
// window gives is reported), or kMaxWindowSimulations runs. The last run's result, and the clock to report.
// `guess_unbound` (likely_unbound) runs the programs at the short benchmarks' clock first: where their draw there
// leaves the limit unbound, that is the fixed point the loop would reach, one run sooner; else the loop runs as
// without the guess (its results the same, one run later).
// With `time_of(result)` (a run's time) given, a FirstRunProbe is fired by the first run at the back-to-back clock
// that is not the last.
struct NoProbe {};
template <class Run, class TimeOf = NoProbe>
auto at_window_clock(const CostModel& cost, Run run_at, bool guess_unbound = false, TimeOf time_of = {}) {
  constexpr bool kProbed = !std::is_same_v<TimeOf, NoProbe>;
  double at_clock_one_s = 0;
  if (guess_unbound) {
    WindowDraw draw;
    auto result = run_at(cost.at_clock(1.0), draw);
    const double next = window_clock_ratio(cost.gpu(), cost.profile(), draw, 1.0);
    if (draw.compute_s <= 0 || next >= 1.0) return std::pair{std::move(result), next};
    if constexpr (kProbed) at_clock_one_s = time_of(result);
  }
  double ratio = back_to_back_clock_ratio(cost.gpu(), cost.profile());
  for (int run = 1;; ++run) {
    WindowDraw draw;
    auto result = run_at(cost.at_clock(ratio), draw);
    const double next = window_clock_ratio(cost.gpu(), cost.profile(), draw, ratio);
    if (draw.compute_s <= 0) return std::pair{std::move(result), next};
    if (std::abs(next - ratio) <= kWindowClockTolerance || run == kMaxWindowSimulations) {
      return std::pair{std::move(result), ratio};
    }
    if constexpr (kProbed) {
      if (run == 1 && FirstRunProbe::armed()) {
        FirstRunProbe::fire(first_run_lower_s(cost, draw, ratio, time_of(result), at_clock_one_s));
      }
    }
    ratio = next;
  }
}

}  // namespace tpsim::sim
