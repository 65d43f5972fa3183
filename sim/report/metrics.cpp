// Interval unions per GPU and stream class, then the differences that define exposure.
#include "sim/report/metrics.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "model/layers/context_parallel_attention.hpp"

namespace tpsim::sim {
namespace {

// Whether `op` is one of context parallelism's K/V exchanges: a data-group collective on their own stream.
bool is_context_parallel_exchange(const model::Op& op) {
  return op.group == model::CommGroup::kData && op.stream == model::kContextParallelStream;
}

using Intervals = std::vector<std::pair<double, double>>;

Intervals merged(Intervals spans) {
  std::sort(spans.begin(), spans.end());
  Intervals out;
  for (const auto& span : spans) {
    if (span.second <= span.first) continue;
    if (!out.empty() && span.first <= out.back().second) {
      out.back().second = std::max(out.back().second, span.second);
    } else {
      out.push_back(span);
    }
  }
  return out;
}

double length(const Intervals& spans) {
  double total = 0;
  for (const auto& span : spans) total += span.second - span.first;
  return total;
}

// Length of `a` not covered by `b` (both merged).
double uncovered(const Intervals& a, const Intervals& b) {
  double total = 0;
  size_t j = 0;
  for (const auto& [start, end] : a) {
    double cursor = start;
    while (j < b.size() && b[j].second <= cursor) ++j;
    for (size_t k = j; k < b.size() && b[k].first < end; ++k) {
      if (b[k].first > cursor) total += b[k].first - cursor;
      cursor = std::max(cursor, b[k].second);
      if (cursor >= end) break;
    }
    if (cursor < end) total += end - cursor;
  }
  return total;
}

// Length of [start, end) covered by `spans` (merged).
double covered(const Intervals& spans, double start, double end) {
  double total = 0;
  for (const auto& [a, b] : spans) {
    if (b <= start) continue;
    if (a >= end) break;
    total += std::min(b, end) - std::max(a, start);
  }
  return total;
}

}  // namespace

std::vector<ModuleSpan> module_exposure(const model::LayerGraph& graph, const Timeline& timeline) {
  std::vector<ModuleSpan> out;
  for (int r = 0; r < timeline.ranks; ++r) {
    Intervals comm;
    std::vector<const OpSpan*> compute;
    std::map<int, ModuleSpan> modules;
    for (const OpSpan& span : timeline.spans) {
      if (span.rank != r) continue;
      const model::Op& op = graph.op(span.op);
      auto [it, fresh] = modules.try_emplace(op.module, ModuleSpan{r, op.module, span.start_s, span.end_s, 0});
      it->second.start_s = std::min(it->second.start_s, span.start_s);
      it->second.end_s = std::max(it->second.end_s, span.end_s);
      if (op.stream == model::Stream::kCompute) {
        compute.push_back(&span);
      } else {
        comm.emplace_back(span.start_s, span.end_s);
      }
    }
    comm = merged(comm);
    std::sort(compute.begin(), compute.end(), [](const OpSpan* a, const OpSpan* b) { return a->start_s < b->start_s; });
    double busy_until = 0;
    for (const OpSpan* span : compute) {
      if (span->start_s > busy_until) {
        modules[graph.op(span->op).module].exposed_comm_s += covered(comm, busy_until, span->start_s);
      }
      busy_until = std::max(busy_until, span->end_s);
    }
    for (auto& [module, span] : modules) out.push_back(span);
  }
  return out;
}

Metrics compute_metrics(const model::LayerGraph& graph, const Timeline& timeline) {
  std::vector<Intervals> compute(timeline.ranks), comm(timeline.ranks), data(timeline.ranks), expert(timeline.ranks),
      context(timeline.ranks);
  for (const OpSpan& span : timeline.spans) {
    const model::Op& op = graph.op(span.op);
    const bool is_compute = op.stream == model::Stream::kCompute;
    (is_compute ? compute : comm)[span.rank].emplace_back(span.start_s, span.end_s);
    if (op.group == model::CommGroup::kData) data[span.rank].emplace_back(span.start_s, span.end_s);
    if (op.group == model::CommGroup::kExpert) expert[span.rank].emplace_back(span.start_s, span.end_s);
    if (is_context_parallel_exchange(op)) context[span.rank].emplace_back(span.start_s, span.end_s);
  }
  Metrics m;
  m.time_s = timeline.makespan_s;
  m.model_flops = graph.model_flops();
  for (int r = 0; r < timeline.ranks; ++r) {
    const Intervals busy_compute = merged(compute[r]);
    const Intervals busy_comm = merged(comm[r]);
    Intervals both = busy_compute;
    both.insert(both.end(), busy_comm.begin(), busy_comm.end());
    m.compute_s += length(busy_compute);
    m.comm_s += length(busy_comm);
    m.exposed_comm_s += uncovered(busy_comm, busy_compute);
    const Intervals busy_data = merged(data[r]);
    m.data_comm_s += length(busy_data);
    m.exposed_data_comm_s += uncovered(busy_data, busy_compute);
    const Intervals busy_context = merged(context[r]);
    m.context_comm_s += length(busy_context);
    m.exposed_context_comm_s += uncovered(busy_context, busy_compute);
    // Idle compute under both groups' collectives counts once, as the data group's.
    Intervals compute_or_data = busy_compute;
    compute_or_data.insert(compute_or_data.end(), busy_data.begin(), busy_data.end());
    const Intervals busy_expert = merged(expert[r]);
    m.expert_comm_s += length(busy_expert);
    m.exposed_expert_comm_s += uncovered(busy_expert, merged(compute_or_data));
    m.idle_s += m.time_s - length(merged(both));
  }
  const double n = std::max(1, timeline.ranks);
  m.compute_s /= n;
  m.comm_s /= n;
  m.exposed_comm_s /= n;
  m.data_comm_s /= n;
  m.exposed_data_comm_s /= n;
  m.expert_comm_s /= n;
  m.exposed_expert_comm_s /= n;
  m.context_comm_s /= n;
  m.exposed_context_comm_s /= n;
  m.idle_s /= n;
  m.overlap = m.comm_s > 0 ? 1.0 - m.exposed_comm_s / m.comm_s : 0.0;
  return m;
}

double overlapped_length(Intervals spans, Intervals cover) {
  double total = 0;
  for (const auto& [start, end] : spans) total += std::max(0.0, end - start);
  return total - uncovered(merged(std::move(spans)), merged(std::move(cover)));
}

Metrics weighted_sum(const Metrics& a, double wa, const Metrics& b, double wb) {
  Metrics m;
  m.time_s = wa * a.time_s + wb * b.time_s;
  m.compute_s = wa * a.compute_s + wb * b.compute_s;
  m.comm_s = wa * a.comm_s + wb * b.comm_s;
  m.exposed_comm_s = wa * a.exposed_comm_s + wb * b.exposed_comm_s;
  m.data_comm_s = wa * a.data_comm_s + wb * b.data_comm_s;
  m.exposed_data_comm_s = wa * a.exposed_data_comm_s + wb * b.exposed_data_comm_s;
  m.expert_comm_s = wa * a.expert_comm_s + wb * b.expert_comm_s;
  m.exposed_expert_comm_s = wa * a.exposed_expert_comm_s + wb * b.exposed_expert_comm_s;
  m.context_comm_s = wa * a.context_comm_s + wb * b.context_comm_s;
  m.exposed_context_comm_s = wa * a.exposed_context_comm_s + wb * b.exposed_context_comm_s;
  m.idle_s = wa * a.idle_s + wb * b.idle_s;
  m.model_flops = wa * a.model_flops + wb * b.model_flops;
  m.overlap = m.comm_s > 0 ? 1.0 - m.exposed_comm_s / m.comm_s : 0.0;
  return m;
}

}  // namespace tpsim::sim
