// Sums of op durations by module and kind over a pass's timeline, and one GPU's op times.
#include "sim/report/breakdown.hpp"

#include <algorithm>
#include <array>

namespace tpsim::sim {
namespace {

enum ModuleKind { kAttention = 0, kFfn = 1, kOther = 2 };

ModuleKind module_kind(int module) {
  if (module < 0) return kOther;
  return module % 2 == 0 ? kAttention : kFfn;
}

}  // namespace

bool is_op_list(const PassTrace& pass) {
  return pass.label == model::to_string(model::Phase::kOps);
}

std::vector<BreakdownRow> breakdown(const PassTrace& pass) {
  std::array<BreakdownRow, 3> rows{BreakdownRow{"attention"}, BreakdownRow{"ffn"}, BreakdownRow{"other"}};
  const model::LayerGraph& graph = pass.graph;
  const bool op_list = is_op_list(pass);
  for (const OpSpan& span : pass.timeline.spans) {
    const model::Op& op = graph.op(span.op);
    BreakdownRow& row = rows[op_list ? kOther : module_kind(op.module)];
    const double d = span.end_s - span.start_s;
    switch (op.kind) {
      case model::OpKind::kGemm:
        row.gemm_s += d;
        break;
      case model::OpKind::kAttention:
        row.attention_s += d;
        break;
      case model::OpKind::kMemory:
        row.memory_s += d;
        break;
      case model::OpKind::kCollective:
      case model::OpKind::kExchange:
        row.communication_s += d;
        break;
    }
  }
  for (const ModuleSpan& m : module_exposure(graph, pass.timeline)) {
    rows[op_list ? kOther : module_kind(m.module)].exposed_comm_s += m.exposed_comm_s;
  }
  const double ranks = std::max(1, pass.timeline.ranks);
  std::vector<BreakdownRow> out;
  BreakdownRow total{"total"};
  for (BreakdownRow& r : rows) {
    for (double* v : {&r.gemm_s, &r.attention_s, &r.memory_s, &r.communication_s, &r.exposed_comm_s}) *v /= ranks;
    if (r.gemm_s + r.attention_s + r.memory_s + r.communication_s == 0) continue;
    total.gemm_s += r.gemm_s;
    total.attention_s += r.attention_s;
    total.memory_s += r.memory_s;
    total.communication_s += r.communication_s;
    total.exposed_comm_s += r.exposed_comm_s;
    out.push_back(r);
  }
  out.push_back(total);
  return out;
}

std::vector<std::pair<std::string, double>> stage_times(const PassTrace& pass) {
  constexpr int kStages = 4;
  std::array<double, kStages> time{};
  std::array<bool, kStages> seen{};
  std::vector<const OpSpan*> compute;
  for (const OpSpan& span : pass.timeline.spans) {
    if (span.rank == 0 && pass.graph.op(span.op).stream == model::Stream::kCompute) compute.push_back(&span);
  }
  std::sort(compute.begin(), compute.end(), [](const OpSpan* a, const OpSpan* b) { return a->end_s < b->end_s; });
  double previous_end = 0;
  for (const OpSpan* span : compute) {
    const int stage = static_cast<int>(pass.graph.op(span->op).stage);
    time[stage] += span->end_s - previous_end;
    seen[stage] = true;
    previous_end = span->end_s;
  }
  std::vector<std::pair<std::string, double>> out;
  for (int s = 0; s < kStages; ++s) {
    if (seen[s]) out.emplace_back(model::to_string(static_cast<model::OpStage>(s)), time[s]);
  }
  return out;
}

std::vector<OpTiming> op_timings(const PassTrace& pass) {
  std::vector<OpTiming> out;
  for (const OpSpan& span : pass.timeline.spans) {
    if (span.rank != 0) continue;
    const model::Op& op = pass.graph.op(span.op);
    out.push_back({op.name, model::to_string(op.stream), span.start_s, span.end_s});
  }
  return out;
}

}  // namespace tpsim::sim
