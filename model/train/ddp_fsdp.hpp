// Data parallelism of a training job (parallelism.dp > 1): DDP (a `ddp:` section, or none) all-reduces the
// gradients in buckets while the last micro-batch's backward runs; FSDP (an `fsdp:` section, PyTorch's
// fully_shard) shards parameters, gradients and optimizer state over the replicas, all-gathers each layer's
// parameters before its forward (and its backward, when it resharded after the forward) and reduce-scatters
// its gradients after its backward. The collectives run over the data-parallel group: the GPUs that hold the
// same TP rank of the same stage in every replica (TP innermost on the topology, then DP).
#pragma once

#include <string>
#include <vector>

namespace tpsim::model {

struct Workload;

// PyTorch DDP's default bucket_cap_mb (torch.nn.parallel.DistributedDataParallel): 25 MiB.
inline constexpr double kDefaultDdpBucketBytes = 25.0 * 1024 * 1024;

struct DataParallel {
  int degree = 1;         // replicas (parallelism.dp)
  int member_stride = 1;  // GPUs between a rank and the same rank of the next replica (Parallelism::dp_stride)
  bool fsdp = false;
  // FSDP: the replicas each parameter is sharded over, consecutive ones (fsdp.shard_degree, dp unless smaller:
  // hybrid sharding, PyTorch's HSDP, replicates the shards over dp / shard_degree groups).
  int shard_degree = 1;
  // FSDP: whether each layer frees its gathered parameters after its forward (gathering them again before its
  // backward); TorchTitan keeps the last layer's, which its backward needs at once.
  bool reshard_after_forward = true;
  double bucket_bytes = kDefaultDdpBucketBytes;  // DDP: gradient bytes per all-reduce
  double reduce_bytes = 4.0;                     // bytes per gradient element reduced (fp32; bf16: 2)

  bool enabled() const { return degree > 1; }
  // Parameters, gradients and optimizer state each rank holds a 1/shards of.
  int shards() const { return fsdp ? shard_degree : 1; }
  bool hybrid() const { return fsdp && shard_degree < degree; }
  // The groups FSDP's collectives run over: the shard_degree consecutive replicas that shard a parameter
  // (gathers, reduce-scatters), and under hybrid sharding the dp / shard_degree replicas that hold the same
  // shard (the all-reduce of each reduced shard), shard_degree replicas apart.
  DataParallel shard_group() const;
  DataParallel replicate_group() const;
};

// "ddp", "fsdp", "fsdp without resharding", "hsdp 4 x 2" (sharded over 4, replicated twice), ...
std::string to_string(const DataParallel& dp);

}  // namespace tpsim::model
