// Ring and one-shot plans, and the auto rule that picks between them.
#include "sim/comm_plan.hpp"

namespace tpsim::sim {
namespace {

using model::CollectiveAlgorithm;
using model::CollectiveKind;

CommPlan ring_plan(const model::Op& op, int ranks, const CostModel& cost) {
  CommPlan plan;
  plan.algorithm = CollectiveAlgorithm::kRing;
  plan.steps = op.collective == CollectiveKind::kAllReduce ? 2 * (ranks - 1) : ranks - 1;
  plan.send_offsets = {1};
  plan.recv_offsets = {-1};
  plan.message_bytes = op.tensor_bytes / ranks;
  plan.transport = cost.profile().nccl;
  if (const auto& small = cost.profile().nccl_small) {
    CommPlan low = plan;
    low.transport = *small;
    low.low_latency_protocol = true;
    if (idle_seconds(low, cost) < idle_seconds(plan, cost)) return low;
  }
  return plan;
}

CommPlan direct_plan(const model::Op& op, int ranks, const CostModel& cost) {
  CommPlan plan;
  plan.algorithm = CollectiveAlgorithm::kDirect;
  plan.steps = 1;
  for (int p = 1; p < ranks; ++p) {
    plan.send_offsets.push_back(p);
    plan.recv_offsets.push_back(-p);
  }
  // All-reduce: every peer's whole tensor; all-gather / reduce-scatter: one 1/n block per peer.
  plan.message_bytes = op.collective == CollectiveKind::kAllReduce ? op.tensor_bytes : op.tensor_bytes / ranks;
  plan.transport = cost.profile().one_shot;
  return plan;
}

// Two-shot: a direct reduce-scatter then a direct all-gather, each a 1/n block to and from every peer.
CommPlan two_shot_plan(const model::Op& op, int ranks, const CostModel& cost) {
  CommPlan plan = direct_plan(op, ranks, cost);
  plan.algorithm = CollectiveAlgorithm::kTwoShot;
  plan.steps = 2;
  plan.message_bytes = op.tensor_bytes / ranks;
  plan.transport = *cost.profile().two_shot;
  return plan;
}

// NVLS: each GPU sends its tensor into the switch once and receives the reduced tensor once; as
// flows, 1/(n-1) of the tensor to and from every peer, so each port carries the tensor each way.
CommPlan nvls_plan(const model::Op& op, int ranks, const CostModel& cost) {
  CommPlan plan = direct_plan(op, ranks, cost);
  plan.algorithm = CollectiveAlgorithm::kNvls;
  plan.message_bytes = op.tensor_bytes / (ranks - 1);
  plan.transport = *cost.profile().nvls;
  return plan;
}

// All-to-all (NCCL's grouped send/recv): one step, a 1/n block to and from every peer. Send/recv: one
// step, the whole tensor to the next rank and from the previous one. Both on NCCL's kernels.
CommPlan point_to_point_plan(const model::Op& op, int ranks, const CostModel& cost) {
  CommPlan plan;
  plan.algorithm = CollectiveAlgorithm::kPointToPoint;
  plan.steps = 1;
  if (op.collective == CollectiveKind::kSendRecv) {
    plan.send_offsets = {1};
    plan.recv_offsets = {-1};
    plan.message_bytes = op.tensor_bytes;
  } else {
    for (int p = 1; p < ranks; ++p) {
      plan.send_offsets.push_back(p);
      plan.recv_offsets.push_back(-p);
    }
    plan.message_bytes = op.tensor_bytes / ranks;
  }
  plan.transport = cost.profile().nccl;
  return plan;
}

}  // namespace

double idle_seconds(const CommPlan& plan, const CostModel& cost) {
  const double per_port = static_cast<double>(plan.send_offsets.size()) * plan.message_bytes;
  return plan.steps * (plan.transport.step_latency_s + per_port / (cost.port_Bps() * plan.transport.link_efficiency));
}

CommPlan plan_communication(const model::Op& op, int ranks, const CostModel& cost) {
  if (ranks < 2) return CommPlan{};
  if (op.kind == model::OpKind::kExchange) {
    CommPlan plan;
    plan.steps = 1;
    if (op.send_offset != 0) plan.send_offsets = {op.send_offset};
    if (op.recv_offset != 0) plan.recv_offsets = {op.recv_offset};
    plan.message_bytes = op.message_bytes;
    plan.transport = cost.transport(op.transport);
    plan.uses_sms = op.transport == model::Transport::kSm;
    return plan;
  }
  if (op.collective == CollectiveKind::kAllToAll || op.collective == CollectiveKind::kSendRecv) {
    return point_to_point_plan(op, ranks, cost);  // one way to run them, whatever was asked
  }
  const bool nvls_possible = op.collective == CollectiveKind::kAllReduce && cost.profile().nvls.has_value() &&
                             cost.fabric().in_switch_reduction;
  const bool two_shot_possible = op.collective == CollectiveKind::kAllReduce && cost.profile().two_shot.has_value();
  switch (op.algorithm) {
    case CollectiveAlgorithm::kRing:
      return ring_plan(op, ranks, cost);
    case CollectiveAlgorithm::kDirect:
      return direct_plan(op, ranks, cost);
    case CollectiveAlgorithm::kNvls:
      // Forced where the hardware has none, or for other collectives: NCCL falls back to the ring.
      return nvls_possible ? nvls_plan(op, ranks, cost) : ring_plan(op, ranks, cost);
    case CollectiveAlgorithm::kTwoShot:
      // Without a measured two-shot (or for another collective) the ring runs.
      return two_shot_possible ? two_shot_plan(op, ranks, cost) : ring_plan(op, ranks, cost);
    case CollectiveAlgorithm::kAuto:
    case CollectiveAlgorithm::kPointToPoint:  // only all-to-alls and send/recvs, handled above
      break;
  }
  CommPlan best = ring_plan(op, ranks, cost);
  if (op.collective != CollectiveKind::kAllReduce) return best;
  std::vector<CommPlan> candidates;
  if (op.tensor_bytes <= cost.profile().one_shot_max_bytes) candidates.push_back(direct_plan(op, ranks, cost));
  if (nvls_possible) candidates.push_back(nvls_plan(op, ranks, cost));
  if (two_shot_possible && op.tensor_bytes <= cost.profile().two_shot_max_bytes) {
    candidates.push_back(two_shot_plan(op, ranks, cost));
  }
  for (CommPlan& candidate : candidates) {
    if (idle_seconds(candidate, cost) < idle_seconds(best, cost)) best = std::move(candidate);
  }
  return best;
}

}  // namespace tpsim::sim
