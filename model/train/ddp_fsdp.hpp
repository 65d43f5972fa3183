// Data parallelism of a training job (parallelism.dp > 1): DDP (a `ddp:` section, or none) all-reduces the
// gradients in buckets while the last micro-batch's backward runs; FSDP (an `fsdp:` section, PyTorch's
// fully_shard) shards parameters, gradients and optimizer state over the replicas, all-gathers each layer's
// parameters before its forward (and its backward, when it resharded after the forward) and reduce-scatters
// its gradients after its backward; Megatron's distributed optimizer (a `distributed_optimizer:` section, ZeRO-1)
// keeps whole bf16 parameters and gradients but shards the fp32 master weights and AdamW's moments over the
// replicas: its gradients are reduce-scattered in buckets and its updated parameters all-gathered in the same
// buckets, after the optimizer or before the next forward (overlap_param_gather). The collectives run over the
// data-parallel group: the GPUs that hold the same TP rank of the same stage in every replica (TP innermost on the
// topology, then DP).
#pragma once

#include <string>
#include <vector>

namespace tpsim::model {

struct Workload;

// PyTorch DDP's default bucket_cap_mb (torch.nn.parallel.DistributedDataParallel): 25 MiB.
inline constexpr double kDefaultDdpBucketBytes = 25.0 * 1024 * 1024;

// Megatron-core's default bucket size in parameters, max(40,000,000, 1,000,000 x dp) (DistributedDataParallelConfig
// .bucket_size, megatron/core/distributed/distributed_data_parallel_config.py in NVIDIA/Megatron-LM).
double megatron_default_bucket_parameters(int dp);

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
  // FSDP under an fp8 tensorwise recipe, as torchao's enable_fsdp_float8_all_gather runs it
  // (torchao/float8/fsdp_utils.py, WeightWithDynamicFloat8CastTensor): each layer linear's fp32 weight shard is cast to
  // e4m3 before the all-gather (fsdp_pre_all_gather), which moves one byte per weight; the gathered weight is an fp8
  // tensor (fsdp_post_all_gather), the only copy held, which the GEMMs read without casting it again. The norms, the
  // embedding and the LM head gather bf16; gradients reduce as before.
  bool fp8_all_gather = false;
  // With it, torchao's precompute_float8_dynamic_scale_for_fsdp after the optimizer step: every fp8 weight's amax in
  // one pass over the shards and one all-reduce, which the casts before the gathers then use; without it each
  // weight's cast takes its amax and all-reduces it over the shard group first.
  bool precompute_fp8_scales = false;
  double bucket_bytes = kDefaultDdpBucketBytes;  // DDP: gradient bytes per all-reduce
  double reduce_bytes = 4.0;                     // bytes per gradient element reduced (fp32; bf16: 2)
  // Megatron's distributed optimizer (use_distributed_optimizer): the optimizer state and fp32 master weights
  // sharded over the group, gradients reduce-scattered and parameters all-gathered in buckets of
  // bucket_parameters. overlap_grad_reduce: each bucket's reduce-scatter issued once its gradients are computed in
  // the last micro-batch's backward (else all after the backward); overlap_param_gather: each bucket's all-gather
  // issued one bucket ahead of the next step's first forward (else all after the optimizer step). Megatron's
  // defaults: both off (DistributedDataParallelConfig).
  bool distributed_optimizer = false;
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  double bucket_parameters = 0;  // 0: megatron_default_bucket_parameters(degree)

  bool enabled() const { return degree > 1; }
  // Parameters, gradients and optimizer state each rank holds a 1/shards of.
  int shards() const { return fsdp ? shard_degree : 1; }
  // The fp32 master weights and AdamW moments each rank holds a 1/state_shards of (FSDP: shards(); the distributed
  // optimizer: the whole group).
  int state_shards() const { return distributed_optimizer ? degree : shards(); }
  // Whether the step all-reduces the squared gradient norm over the group (each rank holds a shard of the
  // gradients it reads: FSDP, the distributed optimizer).
  bool sharded_norm() const { return enabled() && (fsdp || distributed_optimizer); }
  double bucket_size() const {
    return bucket_parameters > 0 ? bucket_parameters : megatron_default_bucket_parameters(degree);
  }
  bool hybrid() const { return fsdp && shard_degree < degree; }
  // The groups FSDP's collectives run over: the shard_degree consecutive replicas that shard a parameter
  // (gathers, reduce-scatters), and under hybrid sharding the dp / shard_degree replicas that hold the same
  // shard (the all-reduce of each reduced shard), shard_degree replicas apart.
  DataParallel shard_group() const;
  DataParallel replicate_group() const;

  bool operator==(const DataParallel&) const = default;  // every field (a memo's key)
};

// The group an MoE model's expert gradients are reduced over (Megatron's expert-data-parallel group): the GPUs
// holding the same experts (slices), one per expert-parallel group of ep x etp GPUs made of whole TP groups of
// consecutive replicas, that many replicas apart. Degree 1: nothing to reduce. `dp` itself for a dense model.
DataParallel expert_data_group(const DataParallel& dp, int expert_group_gpus, int tp);

// "ddp", "fsdp", "fsdp without resharding", "hsdp 4 x 2" (sharded over 4, replicated twice), "zero1",
// "zero1 overlapped" (both overlaps on), ...
std::string to_string(const DataParallel& dp);

}  // namespace tpsim::model
