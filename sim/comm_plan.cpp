// Ring, direct, NVLS and point-to-point plans, multi-node flows, and the auto rule that picks a plan.
#include "sim/comm_plan.hpp"

#include <algorithm>
#include <cmath>

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
  const CostProfile& profile = cost.profile();
  plan.call_latency_s = profile.nccl_call_latency_s;
  if (op.protocol != model::Protocol::kAuto) {
    if (const std::string why = protocol_unavailable_reason(profile, op.protocol); !why.empty()) {
      throw InputError(why);
    }
    const TransportParams* forced = protocol_regime(profile, op.protocol);
    plan.transport = *forced;
    plan.protocol = op.protocol;
    return plan;
  }
  plan.transport = profile.nccl;  // Simple, unless a low-latency regime is faster at this size
  CommPlan best = plan;
  double best_s = idle_seconds(plan, cost);
  for (const model::Protocol p : {model::Protocol::kLowLatency, model::Protocol::kLL, model::Protocol::kLL128}) {
    const TransportParams* regime = protocol_regime(profile, p);
    if (!regime) continue;
    CommPlan candidate = plan;
    candidate.transport = *regime;
    candidate.protocol = p;
    if (const double s = idle_seconds(candidate, cost); s < best_s) {
      best = std::move(candidate);
      best_s = s;
    }
  }
  return best;
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
  plan.call_latency_s = cost.profile().nccl_call_latency_s;
  return plan;
}

// NCCL's tree all-reduce: chains inside nodes, a double binary tree across them, every hop on the
// profile's tree transport, the tensor in chunks of up to tree_chunk_bytes per tree.
CommPlan tree_plan(const model::Op& op, int ranks, const CostModel& cost) {
  // Assumed pipeline depth. In these lockstep steps every chunk pays the hop latency that NCCL
  // overlaps across its in-flight steps, so more chunks overcharge latency and fewer overcharge the
  // 2 x height - 1 fill and drain steps (17 on 4 nodes of 8). The tree fit goes through this same plan,
  // so a fitted tree section absorbs the choice.
  constexpr int kMaxChunks = 64;
  CommPlan plan = base_plan(ranks, cost);
  plan.algorithm = CollectiveAlgorithm::kTree;
  plan.transport = plan.network = *cost.profile().tree;
  plan.call_latency_s = cost.profile().nccl_call_latency_s;
  plan.stripes_rails = plan.gpus_per_node > 0;
  const int per_node = plan.gpus_per_node > 0 ? plan.gpus_per_node : ranks;
  const int trees = ranks > per_node ? 2 : 1;
  const double per_tree = op.tensor_bytes / trees;
  const int chunks =
      static_cast<int>(std::clamp(std::ceil(per_tree / cost.profile().tree_chunk_bytes), 1.0, double{kMaxChunks}));
  plan.schedule = shared_double_binary_tree(ranks / per_node, per_node, chunks);
  plan.steps = static_cast<int>(plan.schedule->sends.size());
  plan.message_bytes = per_tree / chunks;
  return plan;
}

// All-to-all (NCCL's grouped send/recv): one step, a 1/n block to and from every peer. Send/recv: one
// step, the whole tensor to the next rank and from the previous one. Both on NCCL's kernels.
CommPlan point_to_point_plan(const model::Op& op, int ranks, const CostModel& cost) {
  CommPlan plan = base_plan(ranks, cost);
  plan.algorithm = CollectiveAlgorithm::kPointToPoint;
  plan.steps = 1;
  plan.call_latency_s = cost.profile().nccl_call_latency_s;
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

namespace {

// One rank's step alone: `local` messages through its NVLink port and `remote` through its NIC (every
// rail's NIC for striped plans, one sender per node and step), each on its transport; the slower.
double rank_step_seconds(const CommPlan& plan, const CostModel& cost, double local, double remote) {
  double seconds = 0;
  if (local > 0) {
    seconds =
        plan.transport.step_latency_s + local * plan.message_bytes / (cost.port_Bps() * plan.transport.link_efficiency);
  }
  if (remote > 0) {
    const double rails = plan.stripes_rails ? plan.gpus_per_node : 1.0;
    seconds = std::max(
        seconds, plan.network.step_latency_s +
                     remote * plan.message_bytes / (rails * cost.fabric().nic_Bps * plan.network.link_efficiency));
  }
  return seconds;
}

// A scheduled plan: per step, the slowest rank, each link carrying the larger of what the rank sends
// and receives over it.
double idle_schedule_seconds(const CommPlan& plan, const CostModel& cost) {
  double total = 0;
  for (size_t step = 0; step < plan.schedule->sends.size(); ++step) {
    double step_s = 0;
    for (int rank = 0; rank < plan.ranks; ++rank) {
      double local_out = 0, local_in = 0, remote_out = 0, remote_in = 0;
      for (int dst : plan.schedule->sends[step][rank]) (plan.crosses_nodes(rank, dst) ? remote_out : local_out) += 1;
      for (int src : plan.schedule->recvs[step][rank]) (plan.crosses_nodes(src, rank) ? remote_in : local_in) += 1;
      step_s = std::max(step_s,
                        rank_step_seconds(plan, cost, std::max(local_out, local_in), std::max(remote_out, remote_in)));
    }
    total += step_s;
  }
  return total;
}

}  // namespace

double idle_seconds(const CommPlan& plan, const CostModel& cost) {
  if (plan.schedule) return plan.call_latency_s + idle_schedule_seconds(plan, cost);
  // Offset plans: every step alike, its time the slowest rank's (inside one node every rank is alike);
  // a step that sends nothing still pays the transport's latency.
  const int ranks_to_check = plan.gpus_per_node == 0 ? 1 : plan.ranks;
  double step_s = plan.send_offsets.empty() ? plan.transport.step_latency_s : 0;
  for (int rank = 0; rank < ranks_to_check; ++rank) {
    double local = 0, remote = 0;
    for (int offset : plan.send_offsets) {
      const int dst = ((rank + offset) % plan.ranks + plan.ranks) % plan.ranks;
      (plan.crosses_nodes(rank, dst) ? remote : local) += 1;
    }
    step_s = std::max(step_s, rank_step_seconds(plan, cost, local, remote));
  }
  return plan.call_latency_s + plan.steps * step_s;
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
  // A forced protocol other than Simple: NCCL's rings only (NVLS and tree run Simple here).
  const bool simple_allowed = op.protocol == model::Protocol::kAuto || op.protocol == model::Protocol::kSimple;
  const bool custom_allowed = op.protocol == model::Protocol::kAuto;  // one-shot, two-shot: not NCCL
  const bool nvls_possible = op.collective == CollectiveKind::kAllReduce && cost.profile().nvls.has_value() &&
                             cost.fabric().in_switch_reduction && one_domain && simple_allowed;
  const bool two_shot_possible =
      op.collective == CollectiveKind::kAllReduce && cost.profile().two_shot.has_value() && one_domain;
  const bool tree_possible =
      op.collective == CollectiveKind::kAllReduce && cost.profile().tree.has_value() && simple_allowed;
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
    case CollectiveAlgorithm::kTree:
      return tree_possible ? tree_plan(op, ranks, cost) : ring_plan(op, ranks, cost);
    case CollectiveAlgorithm::kAuto:
    case CollectiveAlgorithm::kPointToPoint:  // only all-to-alls and send/recvs, handled above
      break;
  }
  CommPlan best = ring_plan(op, ranks, cost);
  if (op.collective != CollectiveKind::kAllReduce) return best;
  std::vector<CommPlan> candidates;
  if (custom_allowed && one_domain && op.tensor_bytes <= cost.profile().one_shot_max_bytes) {
    candidates.push_back(direct_plan(op, ranks, cost));
  }
  if (nvls_possible && ranks >= cost.profile().nvls_min_ranks) candidates.push_back(nvls_plan(op, ranks, cost));
  if (custom_allowed && two_shot_possible && op.tensor_bytes <= cost.profile().two_shot_max_bytes) {
    candidates.push_back(two_shot_plan(op, ranks, cost));
  }
  if (tree_possible && !one_domain) candidates.push_back(tree_plan(op, ranks, cost));
  for (CommPlan& candidate : candidates) {
    if (idle_seconds(candidate, cost) < idle_seconds(best, cost)) best = std::move(candidate);
  }
  return best;
}

}  // namespace tpsim::sim
