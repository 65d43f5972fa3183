// Placement of a data-parallel group and the closed form of its collectives.
#include "sim/engine/data_group.hpp"

#include <algorithm>
#include <memory>

#include "base/input_error.hpp"

namespace tpsim::sim {

Fabric data_group_fabric(const Fabric& tp_fabric, int stride, int dp) {
  Fabric group = tp_fabric;
  const int per_node = stride < tp_fabric.gpus_per_node ? tp_fabric.gpus_per_node / stride : 1;
  // The first member at the node's start: the last one, (dp - 1) x stride on, still inside it (a stride that does
  // not divide the node, such as a pipeline's first and last stage, may fit more than per_node).
  if (static_cast<int64_t>(dp - 1) * stride < tp_fabric.gpus_per_node) {
    group.nodes = 1;
    group.gpus_per_node = group.max_gpus = dp;
    return group;
  }
  group.gpus_per_node = per_node;
  group.nodes = (dp + per_node - 1) / per_node;
  group.max_gpus = group.nodes * per_node;
  return group;
}

namespace {

CostModel data_group_cost(const model::Op& op, const CostModel& cost) {
  return CostModel(cost.gpu(), cost.profile(), data_group_fabric(cost.fabric(), op.group_stride, op.group_size));
}

}  // namespace

CommPlan plan_data_group_steps(const model::Op& op, const CostModel& cost) {
  return plan_communication(op, op.group_size, data_group_cost(op, cost));
}

double data_group_idle_seconds(const model::Op& op, const CostModel& cost) {
  const CostModel group_cost = data_group_cost(op, cost);
  return idle_seconds(plan_communication(op, op.group_size, group_cost), group_cost);
}

CommPlan in_closed_form(CommPlan plan, const model::Op& op, int ranks, const CostModel& group_cost) {
  const double total_s = idle_seconds(plan, group_cost);
  CommPlan::OutsideGroup outside;
  outside.network = group_cost.fabric().spans_nodes(ranks);
  const double link_Bps = CommPlan::outside_link_Bps(group_cost, outside.network);
  const double efficiency = outside.network ? plan.network.link_efficiency : plan.transport.link_efficiency;
  const double rails = outside.network && plan.stripes_rails ? plan.gpus_per_node : 1.0;
  model::Op over_group = op;
  over_group.group_size = ranks;
  const double link_s = std::min(total_s, model::wire_bytes_per_rank(over_group) / (rails * link_Bps * efficiency));
  outside.link_bytes = link_s * link_Bps;
  outside.latency_s = total_s - link_s;
  plan.outside = outside;
  return plan;
}

CommPlan plan_data_group(const model::Op& op, const CostModel& cost) {
  const CostModel group_cost = data_group_cost(op, cost);
  return in_closed_form(plan_communication(op, op.group_size, group_cost), op, op.group_size, group_cost);
}

int64_t stepped_flows(const CommPlan& plan) {
  if (plan.outside) return 2 * static_cast<int64_t>(plan.ranks);
  int64_t flows = 0;
  if (plan.schedule) {
    for (const auto& step : plan.schedule->sends) {
      for (const auto& sends : step) flows += static_cast<int64_t>(sends.size());
    }
    return flows;
  }
  return static_cast<int64_t>(plan.steps) * plan.ranks * static_cast<int64_t>(plan.send_offsets.size());
}

CommPlan plan_pipeline_send(const model::Op& op, const CostModel& cost) {
  const CostProfile& profile = cost.profile();
  CommPlan plan;
  plan.algorithm = model::CollectiveAlgorithm::kPointToPoint;
  plan.ranks = 2;
  plan.steps = 1;
  auto one_way = std::make_shared<PeerSchedule>();
  one_way->sends = {{{1}, {}}};
  one_way->recvs = {{{}, {0}}};
  plan.schedule = std::move(one_way);
  plan.message_bytes = op.tensor_bytes;
  plan.uses_sms = false;
  if (op.tensor_bytes == 0) {
    // Nothing to move: no NCCL call, only the order between the two passes (a step timed with free sends).
    plan.transport = plan.network = TransportParams{0.0, 1.0};
    return plan;
  }
  plan.call_latency_s = profile.nccl_call_latency_s;
  plan.nccl_call = true;
  plan.transport = profile.nccl;
  if (profile.network) plan.network = *profile.network;
  return plan;
}

CommPlan plan_deepep(const model::Op& op, const CostModel& cost) {
  if (!cost.profile().deepep) {
    throw InputError("profile " + cost.profile().name + " has no deepep section (DeepEP's all-to-alls)");
  }
  const DeepEpParams& d = *cost.profile().deepep;
  const CostModel group_cost = data_group_cost(op, cost);
  CommPlan plan = plan_communication(op, op.group_size, group_cost);
  plan.algorithm = op.algorithm;
  // DeepEP's kernels hold Buffer.num_sms SMs, 20 by default (deepseek-ai/DeepEP deep_ep/buffer.py); its
  // low-latency kernels are assumed alike.
  constexpr int kDeepEpSms = 20;
  plan.sms = kDeepEpSms;
  plan.nccl_call = false;
  plan.call_latency_s = 0;
  double nvlink_efficiency = d.nvlink_efficiency, rdma_efficiency = d.rdma_efficiency, floor_s = 0;
  if (op.algorithm != model::CollectiveAlgorithm::kDeepEp) {
    if (!d.low_latency) {
      throw InputError("profile " + cost.profile().name +
                       " has no deepep.low_latency section (DeepEP's low-latency kernels, which decode runs)");
    }
    const DeepEpLowLatencyParams& l = *d.low_latency;
    const bool dispatch = op.algorithm == model::CollectiveAlgorithm::kDeepEpLowLatencyDispatch;
    nvlink_efficiency = dispatch ? l.dispatch_nvlink_efficiency : l.combine_nvlink_efficiency;
    rdma_efficiency = l.rdma_efficiency;
    floor_s = op.message_bytes > 0 ? l.rdma_latency_s
              : dispatch           ? l.dispatch_nvlink_latency_s
                                   : l.combine_nvlink_latency_s;
  }
  const double nvlink_s = op.tensor_bytes / (group_cost.port_Bps() * nvlink_efficiency);
  const double network_s = op.message_bytes / (group_cost.fabric().nic_Bps * rdma_efficiency);
  CommPlan::OutsideGroup outside;
  outside.network = network_s > nvlink_s;
  const double link_Bps = CommPlan::outside_link_Bps(group_cost, outside.network);
  outside.link_bytes = std::max(nvlink_s, network_s) * link_Bps;
  outside.latency_s = floor_s;
  plan.outside = outside;
  return plan;
}

}  // namespace tpsim::sim
