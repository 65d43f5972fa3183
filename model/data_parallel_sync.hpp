// The data-parallel collectives of a training step's program (data_parallel.hpp), issued around the units
// FSDP wraps (the embedding, each decoder layer, the final norm with the LM head) or DDP buckets:
// - FSDP: each unit's parameters all-gathered (bf16) before its forward, one unit ahead at most (FSDP2's
//   implicit prefetch: the next all-gather waits for the previous unit's first kernel); again before its backward
//   when it resharded (not the last layer nor the head, as TorchTitan wraps them); its gradients
//   reduce-scattered (reduce_dtype) after its backward, every micro-batch (FSDP2 syncs each backward by default).
// - DDP: the last micro-batch's gradients all-reduced in buckets as their backward finishes (PyTorch's first
//   bucket 1 MiB, then bucket_MB each), earlier micro-batches accumulating without a sync (no_sync).
// All-gathers run on stream comm3, reductions on comm4, over the data-parallel group; the optimizer waits for them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/layer_context.hpp"
#include "model/program_builder.hpp"

namespace tpsim::model {

// PyTorch DDP's first bucket (torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES): 1 MiB.
inline constexpr double kDdpFirstBucketBytes = 1024.0 * 1024;

// A unit of parameters the step synchronises: its name ("" for a decoder layer, whose ops carry the layer's
// prefix; "embedding" or "head") and the parameters one TP rank holds of it.
struct SyncUnit {
  std::string name;
  double parameters = 0;
  bool reshards = true;  // FSDP: frees its gathered parameters after its forward
};

class DataParallelSync {
 public:
  explicit DataParallelSync(const LayerContext& ctx);

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

 private:
  // The kernels issued last on the compute streams (what a reduction of the gradients just computed reads).
  std::vector<OpId> compute_tails(const ProgramBuilder& b) const;
  void gather(ProgramBuilder& b, const SyncUnit& unit, const std::string& pass);
  void flush_bucket(ProgramBuilder& b);

  LayerContext ctx_;
  DataParallel dp_;
  std::vector<OpId> reductions_;
  double bucket_bytes_ = 0;  // gradients in the open DDP bucket
  int buckets_ = 0;          // DDP buckets issued
  std::vector<OpId> bucket_reads_;
};

}  // namespace tpsim::model
