// Lower bounds on a program's times from its ops' idle costs, launch gates and dependencies (no simulation).
#include "sim/engine/program_bound.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>

#include "sim/cost/sm_sharing.hpp"
#include "sim/engine/platform.hpp"
#include "sim/engine/runner/window_clock.hpp"

namespace tpsim::sim {
namespace {

using model::Op;
using model::OpId;

// SimGrid ends an activity once what is left of it is below its timing precision (precision/timing, 1e-9 s by
// default): each activity of an op may end that much early.
constexpr double kActivityPrecisionS = 1e-9;

// As the engine: the host records an event and the GPU waits on it.
bool across_streams(const model::LayerGraph& graph, const Op& op, const model::Dep& dep) {
  return dep.rank_offset == 0 && graph.op(dep.op).stream != op.stream;
}

// A step's least time: its transport's latency, then one message at its port's rate (a group across nodes: the
// smaller latency of its two transports only).
double least_step_seconds(const CommPlan& plan, const CostModel& cost) {
  if (plan.send_offsets.empty() && plan.recv_offsets.empty()) return 0;
  if (plan.gpus_per_node > 0) return std::min(plan.transport.step_latency_s, plan.network.step_latency_s);
  const double port_Bps = cost.port_Bps();
  const double wire = plan.message_bytes / plan.transport.link_efficiency;
  return plan.transport.step_latency_s + (port_Bps > 0 ? wire / port_Bps : 0.0);
}

// A communication op's least time from its start, and the activities it runs (each may end early by the precision).
std::pair<double, int> least_comm_seconds(const CommPlan& plan, const CostModel& cost) {
  if (plan.outside) {
    const double link_Bps = CommPlan::outside_link_Bps(cost, plan.outside->network);
    const double moving = link_Bps > 0 ? plan.outside->link_bytes / link_Bps : 0.0;
    return {plan.outside->latency_s + moving, 2};
  }
  const double steps = plan.schedule ? 0.0 : plan.steps * least_step_seconds(plan, cost);
  return {plan.call_latency_s + steps, 1 + 2 * plan.steps};
}

// The flows to groups outside the simulated one: each such op sends its bytes out of every rank through the GPU's NIC
// (or its port inside a node), one direction, at that link's rate and no faster.
struct OutsideBytes {
  double nic = 0, port = 0;
};

double least_seconds(const OutsideBytes& bytes, const CostModel& cost) {
  const auto at_rate = [&](double moved, bool network) {
    const double link_Bps = CommPlan::outside_link_Bps(cost, network);
    return link_Bps > 0 ? moved / link_Bps : 0.0;
  };
  return std::max(at_rate(bytes.nic, true), at_rate(bytes.port, false));
}

void add(OutsideBytes& bytes, const CommPlan::OutsideGroup& outside) {
  (outside.network ? bytes.nic : bytes.port) += outside.link_bytes;
}

// The least time all outside ops' flows take.
double outside_link_seconds(const std::vector<CommPlan>& plans, const CostModel& cost) {
  OutsideBytes bytes;
  for (const CommPlan& plan : plans) {
    if (plan.outside) add(bytes, *plan.outside);
  }
  return least_seconds(bytes, cost);
}

// The least time the GPU's compute-bound work (compute_s at full rate) takes beside the SM-driven outside ops, which
// hold their SMs from their start to their end: while ops holding s SMs or more run, the engine computes at no more
// than the share left of the SMs, 1 - taken(s). With the ops' SM counts s_1 > s_2 > ... > s_k, those holding s_j or
// more run at least U_j (their flows' least time), so a step of T computes at most T - sum_j (taken(s_j) -
// taken(s_j+1)) x U_j (taken(s_k+1) = 0), and T is at least compute_s plus that sum.
double compute_beside_outside_seconds(double compute_s, const std::vector<CommPlan>& plans, const CostModel& cost) {
  std::map<int, OutsideBytes, std::greater<>> by_sms;  // the bytes of the ops holding each SM count
  for (const CommPlan& plan : plans) {
    if (plan.outside && plan.uses_sms && plan.sms > 0) add(by_sms[plan.sms], *plan.outside);
  }
  const auto taken = [&](int sms) { return 1.0 - compute_share_left(cost.gpu().sm_count, sms); };
  OutsideBytes holding;  // of the ops holding s_j SMs or more
  double lost_s = 0;
  for (auto it = by_sms.begin(); it != by_sms.end(); ++it) {
    holding.nic += it->second.nic;
    holding.port += it->second.port;
    const auto next = std::next(it);
    lost_s += (taken(it->first) - (next == by_sms.end() ? 0.0 : taken(next->first))) * least_seconds(holding, cost);
  }
  return compute_s + lost_s;
}

// Each op's launch time as the engine sums it in program order (one stage).
std::vector<double> launch_times(const model::LayerGraph& graph, const std::vector<CommPlan>& plans,
                                 const EngineOptions& options) {
  std::vector<double> launched(graph.size(), 0.0);
  double host_s = 0;
  for (OpId id = 0; id < graph.size(); ++id) {
    const Op& op = graph.op(id);
    if (!op.continues_kernel) {
      int waits = 0;
      for (const model::Dep& dep : op.deps) waits += across_streams(graph, op, dep) ? 1 : 0;
      host_s += options.host_launch_s + waits * options.stream_wait_s;
      if (plans[id].nccl_call) host_s += options.collective_host_s;
    }
    launched[id] = host_s;
  }
  return launched;
}

// Per op its least duration, its compute-bound work and its HBM traffic time (kernels), and its activities.
struct OpCosts {
  std::vector<double> duration_s, compute_s, memory_s;
  std::vector<int> activities;
  double clocked_s = 0;  // the compute-bound kernels' compute_s (their work that follows the SM clock)
  double other_J = 0;  // the memory-bound kernels' HBM energy and the comm ops' transfers', as window_draw counts them
};

// Whether a kernel stays memory-bound at every clock a window can give (kMinClockRatio and up): only then does a run
// at another clock count its HBM traffic among what it draws beside compute.
bool memory_bound_at_any_clock(const KernelCost& k, const CostModel& cost) {
  return k.memory_s > k.compute_s * cost.clock_ratio() / kMinClockRatio;
}

OpCosts op_costs(const model::LayerGraph& graph, const std::vector<CommPlan>& plans, const CostModel& cost) {
  const size_t n = graph.size();
  OpCosts c{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0), std::vector<double>(n, 0.0),
            std::vector<int>(n, 0)};
  for (OpId id = 0; id < n; ++id) {
    const Op& op = graph.op(id);
    if (model::is_kernel(op.kind)) {
      const KernelCost k = cost.kernel_cost(op);
      c.duration_s[id] = k.overhead_s + (k.memory_bound() ? k.memory_s : k.compute_s);
      if (k.memory_bound()) {
        c.memory_s[id] = k.memory_s;
        if (memory_bound_at_any_clock(k, cost)) c.other_J += hbm_energy_J(cost.gpu(), k.memory_bytes);
      } else {
        c.compute_s[id] = k.overhead_s + k.compute_s;
        c.clocked_s += k.compute_s;
      }
      c.activities[id] = 3;  // launch gate, overhead, work
      continue;
    }
    const auto [seconds, activities] = least_comm_seconds(plans[id], cost);
    c.other_J += comm_energy_J(plans[id], cost);
    c.duration_s[id] = seconds;
    c.activities[id] = 1 + activities;
  }
  return c;
}

}  // namespace

std::optional<ProgramBound> bound_program(const model::LayerGraph& graph, const CostModel& cost,
                                          const EngineOptions& options) {
  if (options.skew.enabled() || options.data_group) return std::nullopt;
  const size_t n = graph.size();
  for (OpId id = 0; id < n; ++id) {
    if (graph.op(id).pipeline_stage > 0) return std::nullopt;  // one stage: 0, or none
    for (const model::Dep& dep : graph.op(id).deps) {
      if (dep.op >= id) throw std::logic_error("bound_program: op " + graph.op(id).name + " depends on a later op");
    }
  }
  const std::shared_ptr<const std::vector<CommPlan>> plans = plan_program(graph, cost);
  const std::vector<double> launched = launch_times(graph, *plans, options);
  const OpCosts costs = op_costs(graph, *plans, cost);
  ProgramBound b;
  b.gpu_wait_s = options.gpu_wait_s;
  b.duration_s.resize(n);
  b.start_s.assign(n, 0.0);
  b.tail_s.assign(n, 0.0);
  b.compute_s = costs.compute_s;
  b.clocked_s = costs.clocked_s;
  b.other_J = costs.other_J;
  double compute_sum = 0, memory_sum = 0, activities = 0;
  for (OpId id = 0; id < n; ++id) {
    const Op& op = graph.op(id);
    activities += costs.activities[id];
    b.slack_s = kActivityPrecisionS * activities;
    b.duration_s[id] = std::max(0.0, costs.duration_s[id] - kActivityPrecisionS * costs.activities[id]);
    double start = launched[id] - b.slack_s;
    for (const model::Dep& dep : op.deps) {
      const double gap = across_streams(graph, op, dep) ? options.gpu_wait_s : 0.0;
      start = std::max(start, b.start_s[dep.op] + b.duration_s[dep.op] + gap);
    }
    b.start_s[id] = std::max(0.0, start);
    b.makespan_s = std::max(b.makespan_s, b.start_s[id] + b.duration_s[id]);
    compute_sum += costs.compute_s[id];
    memory_sum += costs.memory_s[id];
  }
  const double compute_s = compute_beside_outside_seconds(compute_sum, *plans, cost);
  const double outside_s = outside_link_seconds(*plans, cost);
  b.makespan_s = std::max({b.makespan_s, compute_s - b.slack_s, memory_sum - b.slack_s, outside_s - b.slack_s, 0.0});
  for (OpId id = static_cast<OpId>(n); id-- > 0;) {
    const Op& op = graph.op(id);
    for (const model::Dep& dep : op.deps) {
      const double gap = across_streams(graph, op, dep) ? options.gpu_wait_s : 0.0;
      b.tail_s[dep.op] = std::max(b.tail_s[dep.op], gap + b.duration_s[id] + b.tail_s[id]);
    }
  }
  return b;
}

std::optional<double> least_gap(const model::LayerGraph& graph, const ProgramBound& bound,
                                const std::vector<bool>& earlier, const std::vector<bool>& later) {
  const size_t n = graph.size();
  // Whether each op has a descendant in `earlier`.
  std::vector<bool> feeds(n, false);
  for (OpId id = static_cast<OpId>(n); id-- > 0;) {
    if (!earlier[id] && !feeds[id]) continue;
    for (const model::Dep& dep : graph.op(id).deps) feeds[dep.op] = true;
  }
  std::optional<double> least;
  std::vector<double> reach(n);
  constexpr double kUnreached = -std::numeric_limits<double>::infinity();
  for (OpId sink = 0; sink < n; ++sink) {
    if (!earlier[sink] || feeds[sink]) continue;
    double gap = later.empty() ? bound.tail_s[sink] : kUnreached;
    if (!later.empty()) {
      // The longest path from the sink's end to each op's end, over its descendants.
      std::fill(reach.begin() + static_cast<std::ptrdiff_t>(sink), reach.end(), kUnreached);
      reach[sink] = 0;
      for (OpId id = sink + 1; id < n; ++id) {
        const Op& op = graph.op(id);
        for (const model::Dep& dep : op.deps) {
          if (dep.op < sink || reach[dep.op] == kUnreached) continue;
          const double wait = across_streams(graph, op, dep) ? bound.gpu_wait_s : 0.0;
          reach[id] = std::max(reach[id], reach[dep.op] + wait + bound.duration_s[id]);
        }
        if (later[id]) gap = std::max(gap, reach[id]);
      }
    }
    if (gap == kUnreached) return std::nullopt;
    least = least ? std::min(*least, gap) : gap;
  }
  if (!least) return std::nullopt;
  return std::max(0.0, *least);
}

double least_last_end(const ProgramBound& bound, const std::vector<bool>& ops) {
  double last = 0, work = 0;
  for (size_t id = 0; id < ops.size(); ++id) {
    if (!ops[id]) continue;
    last = std::max(last, bound.start_s[id] + bound.duration_s[id]);
    work += bound.compute_s[id];
  }
  return std::max(last, work - bound.slack_s);
}

}  // namespace tpsim::sim
