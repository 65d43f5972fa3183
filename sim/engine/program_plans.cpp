// The plan of every communication op of a program: each group's collectives planned by their kind, the data group's
// once per kind and size, and the setting that asked for a collective that cannot run named in the error.
#include "sim/engine/program_plans.hpp"

#include <map>
#include <tuple>

#include "base/limits.hpp"
#include "sim/engine/data_group.hpp"
#include "sim/engine/plan_error.hpp"

namespace tpsim::sim {

using model::Op;
using model::OpId;

namespace {

// A step repeats its data-group collectives (each layer's, each micro-batch's): planned once per kind and size.
using DataPlans = std::map<std::tuple<model::CommGroup, model::CollectiveKind, double, int, int>, CommPlan>;

CommPlan plan_op(const Op& op, int tp, const CostModel& cost, bool data_group_members, DataPlans& data_plans) {
  if (op.group == model::CommGroup::kTensor) {
    // A group too large to run step by step between its ranks takes the closed form.
    const CommPlan plan = plan_communication(op, tp, cost);
    return stepped_flows(plan) > model::kMaxSteppedFlows ? in_closed_form(plan, op, tp, cost) : plan;
  }
  if (op.group == model::CommGroup::kPipeline) return plan_pipeline_send(op, cost);
  // The expert-parallel group's all-to-alls run in closed form even under --no-symmetry (its members are
  // other replicas' ranks, which only the data group's are simulated as).
  if (model::is_deepep(op.algorithm)) return plan_deepep(op, cost);
  const bool steps = data_group_members && op.group == model::CommGroup::kData;
  const auto key = std::make_tuple(op.group, op.collective, op.tensor_bytes, op.group_size, op.group_stride);
  auto found = data_plans.find(key);
  if (found == data_plans.end()) {
    found = data_plans.emplace(key, steps ? plan_data_group_steps(op, cost) : plan_data_group(op, cost)).first;
  }
  return found->second;
}

// What asked for a collective that cannot run: the setting a plan error names, else the op's own algorithm, else
// its own protocol, else neither (NCCL's choice on what the profile and fabric give).
PlanSetting setting_asking(const Op& op, const InputError& error) {
  if (const auto* plan = dynamic_cast<const PlanError*>(&error)) return plan->setting();
  if (op.algorithm != model::CollectiveAlgorithm::kNccl && op.algorithm != model::CollectiveAlgorithm::kAuto) {
    return PlanSetting::kAlgorithm;
  }
  return op.protocol != model::Protocol::kAuto ? PlanSetting::kProtocol : PlanSetting::kProfile;
}

}  // namespace

std::shared_ptr<const std::vector<CommPlan>> plan_program(const model::LayerGraph& graph, const CostModel& cost,
                                                          bool data_group_members) {
  auto plans = std::make_shared<std::vector<CommPlan>>(graph.size());
  DataPlans data_plans;
  for (OpId id = 0; id < graph.size(); ++id) {
    const Op& op = graph.op(id);
    if (!model::is_communication(op.kind)) continue;
    try {
      (*plans)[id] = plan_op(op, graph.tp(), cost, data_group_members, data_plans);
    } catch (const InputError& error) {
      if (error.detail() != error.what()) throw;  // located already
      throw PlanError(setting_asking(op, error), op.name, error.what());
    }
  }
  return plans;
}

}  // namespace tpsim::sim
