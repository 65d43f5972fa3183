// The SMs each simulated GPU's running comm kernels hold, and the compute-bound kernels that share them.
#include "sim/engine/runner/sm_holdings.hpp"

#include <algorithm>

#include "sim/cost/sm_sharing.hpp"

namespace tpsim::sim {

SmHoldings::SmHoldings(const model::LayerGraph& graph, const CostModel& cost, int ranks)
    : graph_(graph), cost_(cost), comm_sms_(ranks, 0), running_compute_(ranks), tilings_(graph.size()) {}

void SmHoldings::change_comm_sms(int rank, int delta) {
  comm_sms_[rank] += delta;
  if (delta > 0) {
    for (Running& running : running_compute_[rank]) {
      if (spills(running.op, rank)) running.shared = true;
    }
  }
}

void SmHoldings::start_compute(model::OpId id, int rank) {
  running_compute_[rank].push_back({id, comm_sms_[rank] > 0 && spills(id, rank)});
}

bool SmHoldings::end_compute(model::OpId id, int rank) {
  std::vector<Running>& running = running_compute_[rank];
  const auto it = std::find_if(running.begin(), running.end(), [id](const Running& r) { return r.op == id; });
  const bool shared = it->shared;
  running.erase(it);
  return shared;
}

double SmHoldings::shared_tail_s(model::OpId id, const KernelCost& k) const {
  return shared_tail_seconds(cost_.profile(), graph_.op(id), tiling(id), k);
}

bool SmHoldings::spills(model::OpId id, int rank) const {
  return spills_past_sms(graph_.op(id), tiling(id), cost_.gpu().sm_count - comm_sms_[rank]);
}

const GemmTiling& SmHoldings::tiling(model::OpId id) const {
  std::optional<GemmTiling>& known = tilings_[id];
  if (!known) {
    const model::Op& op = graph_.op(id);
    known = op.kind == model::OpKind::kGemm ? cost_.gemm_tiling(op.gemm) : GemmTiling{};
  }
  return *known;
}

}  // namespace tpsim::sim
