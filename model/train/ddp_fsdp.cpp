// The shard and replicate groups of a data-parallel training job (its fsdp and ddp sections are read by
// input/section_readers.cpp).
#include "model/train/ddp_fsdp.hpp"

#include "model/graph/workload.hpp"

namespace tpsim::model {

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

std::string to_string(const DataParallel& dp) {
  if (!dp.fsdp) return "ddp";
  const std::string name =
      dp.hybrid() ? "hsdp " + std::to_string(dp.shard_degree) + " x " + std::to_string(dp.degree / dp.shard_degree)
                  : std::string("fsdp");
  return dp.reshard_after_forward ? name : name + " without resharding";
}

}  // namespace tpsim::model
