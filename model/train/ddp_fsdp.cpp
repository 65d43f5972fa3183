// The shard and replicate groups of a data-parallel training job (its fsdp, ddp and distributed_optimizer sections
// are read by input/section_readers.cpp).
#include "model/train/ddp_fsdp.hpp"

#include <algorithm>

#include "model/graph/workload.hpp"

namespace tpsim::model {

double megatron_default_bucket_parameters(int dp) {
  return std::max(40'000'000.0, 1'000'000.0 * dp);
}

DataParallel DataParallel::shard_group() const {
  DataParallel group = *this;
  group.degree = shard_degree;
  return group;
}

DataParallel DataParallel::replicate_group() const {
  DataParallel group = *this;
  group.degree = degree / shard_degree;
  group.member_stride = member_stride * shard_degree;
  return group;
}

DataParallel expert_data_group(const DataParallel& dp, int expert_group_gpus, int tp) {
  DataParallel group = dp;
  const int replicas_per_group = std::max(1, expert_group_gpus / tp);
  group.degree = dp.degree / replicas_per_group;
  group.member_stride = replicas_per_group * dp.member_stride;
  return group;
}

std::string to_string(const DataParallel& dp) {
  if (dp.distributed_optimizer) {
    if (dp.overlap_grad_reduce && dp.overlap_param_gather) return "zero1 overlapped";
    if (dp.overlap_grad_reduce) return "zero1 overlapped grad reduce";
    return dp.overlap_param_gather ? "zero1 overlapped param gather" : "zero1";
  }
  if (!dp.fsdp) return "ddp";
  std::string name =
      dp.hybrid() ? "hsdp " + std::to_string(dp.shard_degree) + " x " + std::to_string(dp.degree / dp.shard_degree)
                  : std::string("fsdp");
  if (!dp.reshard_after_forward) name += " without resharding";
  if (dp.fp8_all_gather)
    name += dp.precompute_fp8_scales ? ", fp8 all-gather (precomputed scales)" : ", fp8 all-gather";
  return name;
}

}  // namespace tpsim::model
