// Grouping of the collectives in simulated passes by how they ran.
#include "sim/report/collective_summary.hpp"

namespace tpsim::sim {

std::vector<CollectiveRun> collectives_run(const std::vector<PassTrace>& passes) {
  std::vector<CollectiveRun> groups;
  for (const PassTrace& pass : passes) {
    if (!pass.timeline.plans) continue;
    for (model::OpId id = 0; id < pass.graph.size(); ++id) {
      const model::Op& op = pass.graph.op(id);
      if (op.kind != model::OpKind::kCollective) continue;
      // A TP group of one GPU runs its collectives as nothing (tp 1 programs still issue them).
      if (op.group == model::CommGroup::kTensor && pass.graph.tp() < 2) continue;
      const CommPlan& plan = (*pass.timeline.plans)[id];
      // The GPUs it runs over: the TP group's, or its own group's (data- or expert-parallel).
      const int ranks = op.group == model::CommGroup::kTensor ? pass.graph.tp() : op.group_size;
      const std::string how = ran_as(plan) + costed_by(plan) + plan.deviation;
      bool found = false;
      for (CollectiveRun& g : groups) {
        if (g.pass == pass.label && g.kind == op.collective && g.tensor_bytes == op.tensor_bytes && g.ranks == ranks &&
            ran_as(g.plan) + costed_by(g.plan) + g.plan.deviation == how) {
          ++g.count;
          found = true;
          break;
        }
      }
      if (!found) groups.push_back({pass.label, op.collective, op.tensor_bytes, ranks, plan, 1});
    }
  }
  return groups;
}

}  // namespace tpsim::sim
