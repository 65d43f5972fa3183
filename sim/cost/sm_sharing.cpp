// SM sharing between compute kernels and SM-driven comm kernels (sm_sharing.hpp).
#include "sim/cost/sm_sharing.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace tpsim::sim {
namespace {

// NCCL's threads per ring/tree channel and bytes per thread before it drops a channel (src/include/device.h:
// NCCL_SIMPLE_MAX_NTHREADS 512, NCCL_LL_MAX_NTHREADS 512, NCCL_LL128_MAX_NTHREADS 640; src/graph/tuning.cc:
// NCCL_SIMPLE_THREAD_THRESHOLD 64, NCCL_LL_THREAD_THRESHOLD 8 times the ranks for rings, NCCL_LL128_THREAD_THRESHOLD
// 8). The unlabelled low-latency regime is taken as LL.
double bytes_per_channel(model::Protocol protocol, int ranks) {
  switch (protocol) {
    case model::Protocol::kLL128:
      return 640.0 * 8;
    case model::Protocol::kLL:
    case model::Protocol::kLowLatency:
      return 512.0 * 8 * std::max(1, ranks);
    default:
      return 512.0 * 64;
  }
}

}  // namespace

int nccl_kernel_sms(const CostProfile& profile, model::CollectiveAlgorithm algorithm, model::Protocol protocol,
                    double bytes, int ranks) {
  using model::CollectiveAlgorithm;
  if (algorithm == CollectiveAlgorithm::kNvls) return profile.nccl_nvls_sms;
  if (algorithm == CollectiveAlgorithm::kPointToPoint) return profile.nccl_p2p_sms;
  const double needed = std::ceil(bytes / bytes_per_channel(protocol, ranks));
  return static_cast<int>(std::clamp(needed, 1.0, static_cast<double>(std::max(1, profile.nccl_sms))));
}

double compute_share_left(int sm_count, int taken_sms) {
  // Assumed floor, not measured: when concurrent comm kernels claim every SM (e.g. 5 ring kernels of 24 channels
  // on 132 SMs), the hardware still time-slices blocks, so a GEMM keeps a small share instead of stalling forever.
  constexpr double kMinComputeShare = 0.05;
  if (sm_count <= 0) return 1.0;
  return std::max(kMinComputeShare, 1.0 - static_cast<double>(taken_sms) / sm_count);
}

bool spills_past_sms(const CostModel& cost, const model::Op& op, int sms_left) {
  if (op.kind != model::OpKind::kGemm) return true;
  return spills_past_sms(op, cost.gemm_tiling(op.gemm), sms_left);
}

bool spills_past_sms(const model::Op& op, const GemmTiling& t, int sms_left) {
  if (op.kind != model::OpKind::kGemm) return true;
  return t.tiles * t.splits > sms_left;
}

double shared_tail_seconds(const CostModel& cost, const model::Op& op, const KernelCost& k) {
  if (op.kind != model::OpKind::kGemm) return 0;
  return shared_tail_seconds(cost.profile(), op, cost.gemm_tiling(op.gemm), k);
}

double shared_tail_seconds(const CostProfile& profile, const model::Op& op, const GemmTiling& t, const KernelCost& k) {
  const double tiles = profile.gemm.shared_tail_tiles;
  if (tiles <= 0 || op.kind != model::OpKind::kGemm || k.memory_bound()) return 0;
  return t.waves > 0 ? tiles * k.compute_s / static_cast<double>(t.waves) : 0;
}

std::vector<int> sm_totals(const std::vector<int>& per_kernel_sms, int max_concurrent, int sm_count) {
  std::set<int> totals = {0};
  for (int k = 0; k < max_concurrent; ++k) {
    std::set<int> next = totals;
    for (int total : totals) {
      for (int sms : per_kernel_sms) next.insert(std::min(sm_count, total + std::max(0, sms)));
    }
    totals = std::move(next);
  }
  return {totals.begin(), totals.end()};
}

}  // namespace tpsim::sim
