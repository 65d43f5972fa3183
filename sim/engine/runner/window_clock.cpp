// A program's draw over the limiter's window, and the fixed point of its clock.
#include "sim/engine/runner/window_clock.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "sim/cost/hbm_traffic.hpp"

namespace tpsim::sim {
namespace {

using Interval = std::pair<double, double>;

// The length of the union of `intervals` (sorted here).
double merged_length(std::vector<Interval>& intervals) {
  std::sort(intervals.begin(), intervals.end());
  double total = 0, start = 0, end = -1;
  for (const auto& [s, e] : intervals) {
    if (s > end) {
      if (end > start) total += end - start;
      start = s;
      end = e;
    } else {
      end = std::max(end, e);
    }
  }
  if (end > start) total += end - start;
  return total;
}

// The bytes a comm op moves each way through each GPU's port: its steps' messages to every peer it sends to, or
// an outside group's link bytes.
double bytes_each_way(const CommPlan& plan) {
  if (plan.outside) return plan.outside->link_bytes;
  const double peers = std::max<double>(1, static_cast<double>(plan.send_offsets.size()));
  return plan.steps * plan.message_bytes * peers;
}

}  // namespace

WindowDraw window_draw(const model::LayerGraph& graph, const CostModel& cost, const Timeline& timeline) {
  WindowDraw draw;
  draw.span_s = timeline.makespan_s * timeline.ranks;
  std::vector<std::vector<Interval>> compute(static_cast<size_t>(timeline.ranks));
  for (const OpSpan& span : timeline.spans) {
    const model::Op& op = graph.op(span.op);
    if (model::is_kernel(op.kind)) {
      const KernelCost k = cost.kernel_cost(op);
      if (k.memory_bound()) {
        draw.other_J += hbm_energy_J(cost.gpu(), k.memory_bytes);
      } else {
        compute[static_cast<size_t>(span.rank)].emplace_back(span.start_s, span.end_s);
      }
    } else if (timeline.plans) {
      const CommPlan& plan = (*timeline.plans)[span.op];
      const double extra = std::max(0.0, plan.hbm_accesses_per_link_byte - kCopyHbmAccessesPerLinkByte);
      draw.other_J += transfer_energy_J(cost.gpu(), cost.profile(), bytes_each_way(plan), extra);
    }
  }
  for (std::vector<Interval>& intervals : compute) draw.compute_s += merged_length(intervals);
  return draw;
}

Timeline simulate_at_window_clock(const model::LayerGraph& graph, const CostModel& cost,
                                  const std::function<Timeline(const CostModel&)>& simulate_at) {
  if (!windowed_power(cost.profile())) {
    Timeline timeline = simulate_at(cost);
    timeline.clock_ratio = cost.clock_ratio();
    return timeline;
  }
  double ratio = back_to_back_clock_ratio(cost.gpu(), cost.profile());
  Timeline timeline;
  for (int run = 1;; ++run) {
    const CostModel at = cost.at_clock(ratio);
    timeline = simulate_at(at);
    timeline.clock_ratio = ratio;
    const WindowDraw draw = window_draw(graph, at, timeline);
    const double next = window_clock_ratio(cost.gpu(), cost.profile(), draw, ratio);
    // Without compute-bound kernels the clock changes nothing the program does.
    if (draw.compute_s <= 0) {
      timeline.clock_ratio = next;
      return timeline;
    }
    if (std::abs(next - ratio) <= kWindowClockTolerance || run == kMaxWindowSimulations) return timeline;
    ratio = next;
  }
}

}  // namespace tpsim::sim
