// The routes a simulation's flows need, found by walking each distinct communication pattern once.
#include "sim/engine/member_placement.hpp"

#include <set>
#include <tuple>
#include <unordered_set>

namespace tpsim::sim {

std::vector<std::pair<int, int>> MemberPlacement::flow_routes(const std::vector<CommPlan>& plans,
                                                              const Fabric* job) const {
  std::unordered_set<uint64_t> seen;
  std::vector<std::pair<int, int>> routes;
  const auto add = [&](int src, int dst) {
    const int a = host_index(src), b = host_index(dst);
    if (seen.insert(static_cast<uint64_t>(a) << 32 | static_cast<uint32_t>(b)).second) routes.emplace_back(a, b);
  };
  // A flow of op `id` from simulated GPU src to dst: one route, or a striped flow's part per rail.
  const auto flow = [&](model::OpId id, const CommPlan& plan, int src, int dst) {
    if (!plan.stripes_rails || !crosses_nodes(id, src, dst, plan, job)) return add(src, dst);
    const int rails = plan.gpus_per_node;
    const int src_base = group_index(id, src) / rails * rails, dst_base = group_index(id, dst) / rails * rails;
    for (int k = 0; k < rails; ++k) add(group_peer(id, src, src_base + k), group_peer(id, dst, dst_base + k));
  };
  // Ops of one pattern (a layer's collectives, a step's buckets) need the same routes: each pattern walked once.
  std::set<std::tuple<model::CommGroup, int, int, int, int, const void*, std::vector<int>, bool, int, int>> patterns;
  for (model::OpId id = 0; id < graph_.size(); ++id) {
    const model::Op& op = graph_.op(id);
    const CommPlan& plan = plans[id];
    if (!model::is_communication(op.kind) || plan.outside || plan.steps == 0) continue;
    if (!patterns
             .emplace(op.group, op.group_size, op.group_stride, op.pipeline_stage, op.receiving_stage,
                      plan.schedule.get(), plan.send_offsets, plan.stripes_rails, plan.gpus_per_node, plan.steps)
             .second) {
      continue;
    }
    for (int g = 0; g < ranks_; ++g) {
      if (!runs_on(id, g)) continue;
      if (!plan.schedule) {
        for (const int offset : plan.send_offsets) flow(id, plan, g, peer_at(id, g, offset));
        continue;
      }
      for (const auto& step : plan.schedule->sends) {
        for (const int index : step[group_index(id, g)]) flow(id, plan, g, group_peer(id, g, index));
      }
    }
  }
  return routes;
}

}  // namespace tpsim::sim
