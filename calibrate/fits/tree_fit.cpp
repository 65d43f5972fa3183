// The tree fit: each sample's step count and bandwidth term from the simulator's own tree plan, then
// relative-error least squares (Eigen QR) for latency and 1 / efficiency.
#include "calibrate/fits/tree_fit.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "base/input_error.hpp"
#include "sim/engine/comm_plan.hpp"

namespace tpsim::calibrate {

double tree_seconds(const sim::TransportParams& params, const TreeSample& sample, const sim::GpuSpec& gpu,
                    const sim::CostProfile& base) {
  sim::CostProfile profile = base;
  profile.tree = params;
  profile.network = params;  // the tree plan runs every hop on the tree transport
  const sim::CostModel cost(gpu, profile, sim::measured_fabric(gpu, sample.nodes, sample.nic_Bps));
  model::Op op;
  op.kind = model::OpKind::kCollective;
  op.collective = model::CollectiveKind::kAllReduce;
  op.tensor_bytes = sample.tensor_bytes;
  op.algorithm = model::CollectiveAlgorithm::kTree;
  return sim::idle_seconds(sim::plan_communication(op, sample.ranks, cost), cost) + sample.framework_s;
}

RingFit fit_tree(const std::vector<TreeSample>& samples, const sim::GpuSpec& gpu, const sim::CostProfile& base) {
  if (samples.size() < 2) throw InputError("a tree fit needs at least two measurements");
  // t - c = steps L + work / eff: steps from a plan with unit latency and no transfer time, work from
  // one with no latency at efficiency 1, both without the call latency.
  constexpr double kInstant = 1e30;
  sim::CostProfile flat = base;
  flat.nccl_call_latency_s = 0;
  const double call_s = base.nccl_call_latency_s;
  const auto rows = static_cast<Eigen::Index>(samples.size());
  Eigen::MatrixXd design(rows, 2);
  Eigen::VectorXd target(rows);
  for (Eigen::Index i = 0; i < rows; ++i) {
    const TreeSample& s = samples[static_cast<size_t>(i)];
    TreeSample device_only = s;
    device_only.framework_s = 0;
    const double steps = tree_seconds({1.0, kInstant}, device_only, gpu, flat);
    const double work = tree_seconds({0.0, 1.0}, device_only, gpu, flat);
    design(i, 0) = std::round(steps) / s.seconds;
    design(i, 1) = work / s.seconds;
    target(i) = (s.seconds - call_s - s.framework_s) / s.seconds;
  }
  const Eigen::Vector2d solution = design.colPivHouseholderQr().solve(target);
  RingFit fit;
  fit.points = samples.size();
  fit.params.step_latency_s = solution(0);
  fit.params.link_efficiency = 1.0 / solution(1);
  for (const TreeSample& s : samples) {
    fit.max_abs_error_pct =
        std::max(fit.max_abs_error_pct, 100.0 * std::abs(tree_seconds(fit.params, s, gpu, base) / s.seconds - 1.0));
  }
  return fit;
}

}  // namespace tpsim::calibrate
