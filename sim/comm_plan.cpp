// Ring, direct, NVLS and point-to-point plans, multi-node flows, and the auto rule that picks a plan.
#include "sim/comm_plan.hpp"

#include <algorithm>

#include "model/input_error.hpp"

namespace tpsim::sim {
namespace {

using model::CollectiveAlgorithm;
using model::CollectiveKind;

// What every plan over `ranks` ranks shares: where node boundaries are and how flows cross them.
CommPlan base_plan(int ranks, const CostModel& cost) {
  CommPlan plan;
  plan.ranks = ranks;
  const Fabric& fabric = cost.fabric();
  if (!fabric.spans_nodes(ranks)) return plan;
  if (!cost.profile().network) {
    throw InputError("the calibration profile (" + cost.profile().name + ") has no network section, and " +
                     std::to_string(ranks) + " ranks span " + std::to_string(ranks / fabric.gpus_per_node) + " " +
                     fabric.name + " nodes; fit one with `tpsim calibrate` on multi-node all-reduce measurements");
  }
  plan.gpus_per_node = fabric.gpus_per_node;
  plan.network = *cost.profile().network;
  return plan;
}

CommPlan ring_plan(const model::Op& op, int ranks, const CostModel& cost) {
  CommPlan plan = base_plan(ranks, cost);
  plan.stripes_rails = plan.gpus_per_node > 0;
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
  CommPlan plan = base_plan(ranks, cost);
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
  CommPlan plan = base_plan(ranks, cost);
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
  const auto port_seconds = [&](double messages) {
    return plan.transport.step_latency_s +
           messages * plan.message_bytes / (cost.port_Bps() * plan.transport.link_efficiency);
  };
  if (plan.gpus_per_node == 0) return plan.steps * port_seconds(static_cast<double>(plan.send_offsets.size()));
  // Per step, each rank's sends inside its node share its NVLink port and those to other nodes its
  // NIC (striped plans: every rail's NIC, one sender per node and step in a ring).
  const double rails = plan.stripes_rails ? plan.gpus_per_node : 1.0;
  double step_s = 0;
  for (int rank = 0; rank < plan.ranks; ++rank) {
    double local = 0, remote = 0;
    for (int offset : plan.send_offsets) {
      const int dst = ((rank + offset) % plan.ranks + plan.ranks) % plan.ranks;
      (plan.crosses_nodes(rank, dst) ? remote : local) += 1;
    }
    if (local > 0 || remote == 0) step_s = std::max(step_s, port_seconds(local));
    if (remote > 0) {
      step_s = std::max(
          step_s, plan.network.step_latency_s +
                      remote * plan.message_bytes / (rails * cost.fabric().nic_Bps * plan.network.link_efficiency));
    }
  }
  return plan.steps * step_s;
}

CommPlan plan_communication(const model::Op& op, int ranks, const CostModel& cost) {
  if (ranks < 2) return CommPlan{};
  if (op.kind == model::OpKind::kExchange) {
    CommPlan plan = base_plan(ranks, cost);
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
  // One-shot, two-shot and NVLS move data over NVLink (or NVSwitch multicast) alone.
  const bool one_domain = !cost.fabric().spans_nodes(ranks);
  const bool nvls_possible = op.collective == CollectiveKind::kAllReduce && cost.profile().nvls.has_value() &&
                             cost.fabric().in_switch_reduction && one_domain;
  const bool two_shot_possible =
      op.collective == CollectiveKind::kAllReduce && cost.profile().two_shot.has_value() && one_domain;
  switch (op.algorithm) {
    case CollectiveAlgorithm::kRing:
      return ring_plan(op, ranks, cost);
    case CollectiveAlgorithm::kDirect:
      return one_domain ? direct_plan(op, ranks, cost) : ring_plan(op, ranks, cost);
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
  if (one_domain && op.tensor_bytes <= cost.profile().one_shot_max_bytes) {
    candidates.push_back(direct_plan(op, ranks, cost));
  }
  if (nvls_possible && ranks >= cost.profile().nvls_min_ranks) candidates.push_back(nvls_plan(op, ranks, cost));
  if (two_shot_possible && op.tensor_bytes <= cost.profile().two_shot_max_bytes) {
    candidates.push_back(two_shot_plan(op, ranks, cost));
  }
  for (CommPlan& candidate : candidates) {
    if (idle_seconds(candidate, cost) < idle_seconds(best, cost)) best = std::move(candidate);
  }
  return best;
}

}  // namespace tpsim::sim
