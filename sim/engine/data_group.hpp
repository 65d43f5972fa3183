// The data-parallel group of a job's simulated TP group: where its members sit (member k of rank r is GPU
// r + k·stride, stride = tp or tp·pp as parallelism.order places the replicas) and the closed form of a
// collective over it.
#pragma once

#include <cstdint>

#include "model/graph/op.hpp"
#include "sim/cost/cost_model.hpp"
#include "sim/engine/comm_plan.hpp"

namespace tpsim::sim {

// The fabric `dp` members of a data-parallel group span, `stride` GPUs apart on the TP group's fabric: one
// NVSwitch domain while its members, `stride` GPUs apart from a node's first, fit in the node, else nodes of
// gpus_per_node / stride members each (one when the stride fills a node or more), each member using its own NIC (the
// rails of its node's TP ranks are the group's).
Fabric data_group_fabric(const Fabric& tp_fabric, int stride, int dp);

// The plan of data-group collective `op` over its members, as NCCL runs it (plan_communication on
// data_group_fabric; index k of the plan is member k): what --no-symmetry runs step by step between them.
CommPlan plan_data_group_steps(const model::Op& op, const CostModel& cost);

// The plan of data-group collective `op` (CommGroup::kData, op.group_size members op.group_stride GPUs apart) on
// `cost`'s fabric (the TP group's): what NCCL runs over the group (plan_communication on data_group_fabric), with its
// closed form: an idle-fabric time of idle_seconds, of which the bytes through one GPU's own link take
// wire_bytes_per_rank / (its rails x link x efficiency) and the rest is latency.
CommPlan plan_data_group(const model::Op& op, const CostModel& cost);

// `plan` (of `op` over `ranks` GPUs of `group_cost`'s fabric) in closed form: the engine runs its idle-fabric time
// (idle_seconds) as a wait, then the bytes through each GPU's own link beside whatever else crosses it, instead of its
// steps between the ranks (which then need not wait for each other).
CommPlan in_closed_form(CommPlan plan, const model::Op& op, int ranks, const CostModel& group_cost);

// The flows `plan` starts when run step by step between its ranks (2 per rank in closed form).
int64_t stepped_flows(const CommPlan& plan);
// That plan's time alone on an idle fabric (idle_seconds over the group's placement).
double data_group_idle_seconds(const model::Op& op, const CostModel& cost);

// The plan of a send between pipeline stages (CommGroup::kPipeline, simulated whole): one NCCL point-to-point message
// of op.tensor_bytes from index 0 (the sending stage's GPU) to index 1 (the receiving stage's), on the profile's
// NVLink transport inside a node and its network transport through the GPU's own NIC across nodes (which the engine
// tells from the two GPUs' places). It takes no SMs from the passes beside it, as the schedule's timing assumes. A
// send of no bytes costs nothing: only its order between the two passes (a step timed with free sends).
CommPlan plan_pipeline_send(const model::Op& op, const CostModel& cost);

// The plan of an MoE all-to-all as DeepEP's normal kernels run it (CollectiveAlgorithm::kDeepEp): op.tensor_bytes
// received over NVLink at deepep.nvlink_efficiency of the port, op.message_bytes sent across nodes at
// deepep.rdma_efficiency of the NIC, the slower in closed form through its link (no NCCL call latency). Its
// low-latency dispatch and combine: the same at deepep.low_latency's rates, after the kernel's floor (the RDMA one
// when bytes cross nodes).
CommPlan plan_deepep(const model::Op& op, const CostModel& cost);

}  // namespace tpsim::sim
