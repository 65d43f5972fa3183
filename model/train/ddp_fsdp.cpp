// Reads the fsdp, ddp and distributed_optimizer sections of a data-parallel training job.
#include "model/train/ddp_fsdp.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>

#include "input/yaml_reader.hpp"
#include "model/graph/workload.hpp"

namespace tpsim::model {

const std::vector<std::string>& fsdp_keys() {
  static const std::vector<std::string> keys = {"shard_degree", "reshard_after_forward", "reduce_dtype"};
  return keys;
}

const std::vector<std::string>& ddp_keys() {
  static const std::vector<std::string> keys = {"bucket_MB", "reduce_dtype"};
  return keys;
}

const std::vector<std::string>& distributed_optimizer_keys() {
  static const std::vector<std::string> keys = {"overlap_grad_reduce", "overlap_param_gather", "bucket_size",
                                                "reduce_dtype"};
  return keys;
}

double megatron_default_bucket_parameters(int dp) {
  return std::max(40'000'000.0, 1'000'000.0 * dp);
}

namespace {

// <section>.reduce_dtype: the gradients' width in their reduction (FSDP2's MixedPrecisionPolicy.reduce_dtype,
// Megatron's grad_reduce_in_fp32).
double read_reduce_bytes(const YamlReader& in, const YAML::Node& node, const std::string& section) {
  if (!node["reduce_dtype"]) return 4.0;
  return in.choice(node["reduce_dtype"], section + ".reduce_dtype", {"fp32", "bf16"}) == "bf16" ? 2.0 : 4.0;
}

// The distributed_optimizer section (Megatron's DistributedDataParallelConfig names).
void read_distributed_optimizer(const YamlReader& in, const YAML::Node& node, DataParallel& dp) {
  in.expect_map(node, "distributed_optimizer", distributed_optimizer_keys());
  dp.distributed_optimizer = true;
  for (const auto& [key, flag] : {std::pair{"overlap_grad_reduce", &dp.overlap_grad_reduce},
                                  std::pair{"overlap_param_gather", &dp.overlap_param_gather}}) {
    if (node[key]) *flag = in.boolean(node[key], std::string("distributed_optimizer.") + key);
  }
  if (node["bucket_size"]) {
    dp.bucket_parameters =
        static_cast<double>(in.positive_int(node["bucket_size"], "distributed_optimizer.bucket_size"));
  }
  dp.reduce_bytes = read_reduce_bytes(in, node, "distributed_optimizer");
}

}  // namespace

DataParallel read_data_parallel(const YamlReader& in, const YAML::Node& fsdp, const YAML::Node& ddp,
                                const YAML::Node& distributed_optimizer, const YAML::Node& dp_key, int degree,
                                const Workload& workload) {
  DataParallel dp;
  dp.degree = degree;
  const std::array<std::pair<YAML::Node, const char*>, 3> sections = {
      std::pair{fsdp, "fsdp"}, std::pair{ddp, "ddp"}, std::pair{distributed_optimizer, "distributed_optimizer"}};
  for (const auto& [node, name] : sections) {
    if (node.IsDefined() && degree < 2) {
      in.fail(node, std::string(name) + " needs parallelism.dp of 2 or more (dp is " + std::to_string(degree) + ")");
    }
  }
  if (degree < 2) return dp;
  if (workload.phase != Phase::kTrain) {
    in.fail(dp_key, "parallelism.dp > 1 replicates a training step: it needs workload.phase train (phase is " +
                        to_string(workload.phase) +
                        "); inference replicas share nothing, so one replica's tokens/s times dp is theirs");
  }
  if (fsdp.IsDefined() && ddp.IsDefined()) {
    in.fail(ddp, "ddp and fsdp are two ways to run parallelism.dp; give one of them");
  }
  if (distributed_optimizer.IsDefined() && (fsdp.IsDefined() || ddp.IsDefined())) {
    in.fail(distributed_optimizer, std::string("distributed_optimizer and ") + (fsdp.IsDefined() ? "fsdp" : "ddp") +
                                       " are two ways to run parallelism.dp; give one of them");
  }
  if (distributed_optimizer.IsDefined()) read_distributed_optimizer(in, distributed_optimizer, dp);
  if (fsdp.IsDefined()) {
    in.expect_map(fsdp, "fsdp", fsdp_keys());
    dp.fsdp = true;
    dp.shard_degree = degree;
    if (const YAML::Node shards = fsdp["shard_degree"]) {
      const int64_t value = in.positive_int(shards, "fsdp.shard_degree");
      if (value < 2 || value > degree || degree % value != 0) {
        in.fail(shards, "fsdp.shard_degree " + std::to_string(value) + " must divide the " + std::to_string(degree) +
                            " replicas and be 2 or more; valid: a divisor of parallelism.dp (" +
                            std::to_string(degree) + ": full sharding) from 2 (hybrid sharding below it)");
      }
      dp.shard_degree = static_cast<int>(value);
    }
    if (fsdp["reshard_after_forward"]) {
      dp.reshard_after_forward = in.boolean(fsdp["reshard_after_forward"], "fsdp.reshard_after_forward");
    }
    dp.reduce_bytes = read_reduce_bytes(in, fsdp, "fsdp");
  }
  if (ddp.IsDefined()) {
    in.expect_map(ddp, "ddp", ddp_keys());
    if (ddp["bucket_MB"]) dp.bucket_bytes = in.number_in(ddp["bucket_MB"], "ddp.bucket_MB", 0.001, 1e6) * 1024 * 1024;
    dp.reduce_bytes = read_reduce_bytes(in, ddp, "ddp");
  }
  return dp;
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
  const std::string name =
      dp.hybrid() ? "hsdp " + std::to_string(dp.shard_degree) + " x " + std::to_string(dp.degree / dp.shard_degree)
                  : std::string("fsdp");
  return dp.reshard_after_forward ? name : name + " without resharding";
}

}  // namespace tpsim::model
