// The data-parallel collectives of a training step's program (data_parallel.hpp), issued around the units
// FSDP wraps (the embedding, each decoder layer, the final norm with the LM head) or DDP buckets:
// - FSDP: each unit's parameters all-gathered (bf16; under fp8_all_gather its linears' weights in e4m3, each fp32
//   shard cast first on the gather's stream, as FSDP2's copy-in stream runs torchao's fsdp_pre_all_gather, after its
//   amax and that amax's all-reduce over the shard group unless precompute_fp8_scales took every weight's amax after
//   the previous optimizer step, in one pass and one all-reduce over the shard group and one over the TP group: the
//   DTensor reduction over both mesh dimensions) before its forward, one unit ahead at most (FSDP2's
//   implicit prefetch: the next all-gather waits for the previous unit's first kernel); again before its backward
//   when it resharded (not the last layer nor the head, as TorchTitan wraps them); its gradients
//   reduce-scattered (reduce_dtype) after its backward, every micro-batch (FSDP2 syncs each backward by default).
// - DDP: the last micro-batch's gradients all-reduced in buckets as their backward finishes (PyTorch's first
//   bucket 1 MiB, then bucket_MB each), earlier micro-batches accumulating without a sync (no_sync); an MoE
//   model's expert gradients in buckets of their own over the expert-data-parallel group (Megatron's separate
//   expert buffers).
// - FSDP of an MoE model: a layer's expert parameters gathered and reduce-scattered over the expert-data-parallel
//   group, the rest over the data-parallel group (full sharding only).
// - The distributed optimizer (Megatron's): the last micro-batch's gradients reduce-scattered per bucket of
//   bucket_size parameters (expert and dense parameters in buckets of their own, as DDP's), as each bucket's last
//   unit finishes its backward (overlap_grad_reduce) or all after the backward; the updated bf16 parameters
//   all-gathered in the same buckets after the optimizer, or (overlap_param_gather) before the step's first forward
//   reads them, one bucket ahead (Megatron's forward pre-hook waits for its bucket and dispatches the next). Bucket
//   boundaries fall between units (a decoder layer, the embedding, the head), where Megatron closes a bucket at the
//   first parameter that fills it.
// All-gathers run on stream comm3, reductions on comm4, over the data-parallel group; the optimizer waits for them.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/graph/layer_context.hpp"
#include "model/graph/program_builder.hpp"

namespace tpsim::model {

// PyTorch DDP's first bucket (torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES): 1 MiB.
inline constexpr double kDdpFirstBucketBytes = 1024.0 * 1024;

// A unit of parameters the step synchronises: its name ("" for a decoder layer, whose ops carry the layer's
// prefix; "embedding" or "head") and the parameters one TP rank holds of it.
struct SyncUnit {
  std::string name;
  // Its place in the forward order: the embedding -1, decoder layer l (of the workload's) l, the head `layers`.
  int64_t position = 0;
  double parameters = 0;
  // Of those, an MoE layer's experts: DDP all-reduces their gradients over the expert-data-parallel group (the
  // GPUs holding the same experts: tp x dp / (ep x etp) of them, ep x etp / tp replicas apart) instead of the
  // data-parallel group.
  double expert_parameters = 0;
  bool reshards = true;  // FSDP: frees its gathered parameters after its forward
  // FSDP's fp8 all-gather (DataParallel::fp8_all_gather): of its parameters, the layer linears' weights, each cast
  // from its fp32 shard to e4m3 before the gather and gathered one byte each (the norms, embedding and head: bf16).
  double fp8_parameters = 0;
};

class DataParallelSync {
 public:
  explicit DataParallelSync(const LayerContext& ctx);

  // The micro-batch whose ops are issued next (the distributed optimizer gathers in the first one's forward).
  void set_micro_batch(int64_t mb) { microbatch_ = mb; }

  SyncUnit layer_unit(int64_t layer) const;
  SyncUnit embedding_unit() const;
  SyncUnit head_unit() const;

  // Before the unit's forward kernels (FSDP: the all-gather the next kernel waits for).
  void before_forward(ProgramBuilder& b, const SyncUnit& unit);
  // Before the unit's backward (its recomputation first): FSDP's all-gather again if the unit resharded.
  void before_backward(ProgramBuilder& b, const SyncUnit& unit);
  // After the unit's backward kernels in micro-batch `microbatch` (FSDP: the reduce-scatter; DDP in the last
  // micro-batch: into the open bucket, all-reduced once full).
  void after_backward(ProgramBuilder& b, const SyncUnit& unit, int64_t microbatch);
  // After the last backward: the open DDP bucket's all-reduce. Returns the step's last gradient reduction (the
  // others precede it on its stream): what the optimizer reads; nullopt without data parallelism.
  std::optional<OpId> finish(ProgramBuilder& b);
  // After the optimizer's update `update`: the distributed optimizer's all-gathers of the updated parameters, when
  // not overlapped with the next forward.
  void after_optimizer(ProgramBuilder& b, OpId update);
  // The parameters whose fp32 master weights and moments this rank updates: every local one, or its shard of them
  // (FSDP; the distributed optimizer: the dense ones over the data-parallel group, the experts over theirs).
  double optimizer_parameters() const;

 private:
  // DDP's buckets over one group: the open one's gradients and what they were last read after.
  struct Buckets {
    std::string name;  // "ddp" or "ddp.experts"
    DataParallel group;
    double bytes = 0;  // gradients in the open bucket
    int issued = 0;    // buckets all-reduced so far
    std::vector<OpId> reads;
  };

  // The kernels issued last on the compute streams (what a reduction of the gradients just computed reads).
  std::vector<OpId> compute_tails(const ProgramBuilder& b) const;
  void gather(ProgramBuilder& b, const SyncUnit& unit, const std::string& pass);
  // FSDP's fp8 all-gather: the unit's fp32 weight shards cast to e4m3 on the gather's stream (after each weight's amax
  // and its all-reduce, without precomputed scales), following `after`. Returns the cast.
  OpId cast_shards_to_fp8(ProgramBuilder& b, const SyncUnit& unit, const std::string& pass,
                          const std::vector<OpId>& after);
  // precompute_fp8_scales after the optimizer's update: every fp8 weight's amax over this rank's shards, all-reduced.
  void precompute_fp8_scales(ProgramBuilder& b, OpId update);
  // The separate weight tensors (nn.Linear modules) of one decoder layer: what torchao casts and scales one by one.
  int fp8_weights_per_layer() const;
  // Adds `bytes` of gradients to `buckets`' open one, all-reduced once full.
  void fill_bucket(ProgramBuilder& b, Buckets& buckets, double bytes);
  void flush_bucket(ProgramBuilder& b, Buckets& buckets);

  // The distributed optimizer's buckets over one buffer (dense or expert parameters), numbered in backward order
  // (Megatron fills them from the last parameter): each one's parameters, the unit closing it (its last in backward
  // order), each unit's bucket, and the all-gathers issued so far.
  struct ZeroBuffer {
    std::string name;  // "zero1" or "zero1.experts"
    DataParallel group;
    std::vector<double> parameters;
    std::vector<int64_t> closing;
    std::map<int64_t, int> bucket_of;
    std::map<int, OpId> gathers;
    std::vector<int> pending_buckets;  // without overlap_grad_reduce: reduce-scattered after the backward
  };
  std::vector<SyncUnit> units_backward() const;
  // The unit's expert parameters FSDP shards over the expert-data-parallel group apart from the rest (0 where that
  // group is the data-parallel group itself).
  double separate_experts(const SyncUnit& unit) const;
  void plan_zero_buffers();
  void zero_gather(ProgramBuilder& b, ZeroBuffer& buffer, int bucket, const std::vector<OpId>& deps,
                   const std::vector<OpId>& after);
  void zero_before_forward(ProgramBuilder& b, const SyncUnit& unit);
  void zero_after_backward(ProgramBuilder& b, const SyncUnit& unit);
  void zero_reduce(ProgramBuilder& b, ZeroBuffer& buffer, int bucket, const std::vector<OpId>& reads);

  LayerContext ctx_;
  DataParallel dp_;
  std::vector<OpId> reductions_;
  Buckets dense_;
  Buckets experts_;                 // an MoE model's expert gradients (group degree 1: nothing to reduce)
  std::array<ZeroBuffer, 2> zero_;  // dense, experts
  int64_t microbatch_ = 0;
};

}  // namespace tpsim::model
