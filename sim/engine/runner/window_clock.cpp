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

// Per op, what one instance draws above idle beside its compute-bound time: a memory-bound kernel's HBM bytes, a comm
// op's transfers; and whether it is a compute-bound kernel. Costed once per op, not per rank.
struct OpDraw {
  double energy_J = 0;
  bool compute_bound = false;
};

std::vector<OpDraw> op_draws(const model::LayerGraph& graph, const CostModel& cost, const Timeline& timeline) {
  std::vector<OpDraw> draws(graph.size());
  for (model::OpId id = 0; id < graph.size(); ++id) {
    const model::Op& op = graph.op(id);
    if (model::is_kernel(op.kind)) {
      const KernelCost k = cost.kernel_cost(op);
      draws[id].compute_bound = !k.memory_bound();
      if (k.memory_bound()) draws[id].energy_J = hbm_energy_J(cost.gpu(), k.memory_bytes);
    } else if (timeline.plans) {
      draws[id].energy_J = comm_energy_J((*timeline.plans)[id], cost);
    }
  }
  return draws;
}

}  // namespace

double comm_energy_J(const CommPlan& plan, const CostModel& cost) {
  const double peers = std::max<double>(1, static_cast<double>(plan.send_offsets.size()));
  const double bytes_each_way = plan.outside ? plan.outside->link_bytes : plan.steps * plan.message_bytes * peers;
  const double extra = std::max(0.0, plan.hbm_accesses_per_link_byte - kCopyHbmAccessesPerLinkByte);
  return transfer_energy_J(cost.gpu(), cost.profile(), bytes_each_way, extra);
}

WindowDraw window_draw(const model::LayerGraph& graph, const CostModel& cost, const Timeline& timeline) {
  WindowDraw draw;
  draw.span_s = timeline.makespan_s * timeline.ranks;
  const std::vector<OpDraw> draws = op_draws(graph, cost, timeline);
  std::vector<std::vector<Interval>> compute(static_cast<size_t>(timeline.ranks));
  for (const OpSpan& span : timeline.spans) {
    draw.other_J += draws[span.op].energy_J;
    if (draws[span.op].compute_bound) compute[static_cast<size_t>(span.rank)].emplace_back(span.start_s, span.end_s);
  }
  for (std::vector<Interval>& intervals : compute) draw.compute_s += merged_length(intervals);
  return draw;
}

bool likely_unbound(const CostModel& cost, double compute_s, double memory_s, double memory_J) {
  const double span_s = compute_s + memory_s;
  if (!windowed_power(cost.profile()) || span_s <= 0) return true;
  const PowerParams& power = *cost.profile().power;
  const double above_idle_W = binding_limit_W(cost.gpu(), power) - power.idle_W;
  return compute_s * compute_dynamic_W(power, 1.0) + memory_J <= above_idle_W * span_s;
}

bool likely_unbound(const model::LayerGraph& graph, const CostModel& cost) {
  double compute_s = 0, memory_s = 0, memory_J = 0;
  for (model::OpId id = 0; id < graph.size(); ++id) {
    if (!model::is_kernel(graph.op(id).kind)) continue;
    const KernelCost k = cost.kernel_cost(graph.op(id));
    if (k.memory_bound()) {
      memory_s += k.memory_s;
      memory_J += hbm_energy_J(cost.gpu(), k.memory_bytes);
    } else {
      compute_s += k.compute_s * cost.clock_ratio();
    }
  }
  return likely_unbound(cost, compute_s, memory_s, memory_J);
}

namespace {

// This thread's probe: installed, and whether it has fired.
thread_local bool probe_installed = false;
thread_local bool probe_fired = false;

}  // namespace

FirstRunProbe::FirstRunProbe() {
  probe_installed = true;
  probe_fired = false;
}

FirstRunProbe::~FirstRunProbe() {
  probe_installed = false;
}

bool FirstRunProbe::armed() {
  return probe_installed && !probe_fired;
}

void FirstRunProbe::fire(double lower_s) {
  probe_fired = true;
  throw FirstRunBound{lower_s};
}

double first_run_lower_s(const CostModel& cost, const WindowDraw& draw, double ratio, double time_s,
                         double at_clock_one_s) {
  const double highest = std::max(ratio, held_span_clock_ratio(cost.gpu(), cost.profile(), draw, ratio));
  return std::max(at_clock_one_s, time_s * ratio / highest);
}

Timeline simulate_at_window_clock(const model::LayerGraph& graph, const CostModel& cost,
                                  const std::function<Timeline(const CostModel&)>& simulate_at) {
  if (!windowed_power(cost.profile())) {
    Timeline timeline = simulate_at(cost);
    timeline.clock_ratio = cost.clock_ratio();
    return timeline;
  }
  auto [timeline, clock] = at_window_clock(
      cost,
      [&](const CostModel& at, WindowDraw& draw) {
        Timeline ran = simulate_at(at);
        draw = window_draw(graph, at, ran);
        return ran;
      },
      likely_unbound(graph, cost), [](const Timeline& ran) { return ran.makespan_s; });
  timeline.clock_ratio = clock;
  return timeline;
}

}  // namespace tpsim::sim
