// FSDP's per-unit all-gathers and reduce-scatters, and DDP's bucketed all-reduces, in a step's program.
#include "model/data_parallel_sync.hpp"

#include "model/parameter_count.hpp"

namespace tpsim::model {

DataParallelSync::DataParallelSync(const LayerContext& ctx) : ctx_(ctx), dp_(ctx.workload.data_parallel) {}

SyncUnit DataParallelSync::layer_unit(int64_t layer) const {
  // TorchTitan keeps the last layer gathered after its forward: its backward follows at once.
  return SyncUnit{"", layer_parameters_per_rank(ctx_.arch, ctx_.shard, 1),
                  dp_.reshard_after_forward && layer + 1 < ctx_.workload.layers};
}

SyncUnit DataParallelSync::embedding_unit() const {
  return SyncUnit{"embedding.", end_parameters_per_rank(ctx_.arch, ctx_.shard.tp, true, false),
                  dp_.reshard_after_forward};
}

SyncUnit DataParallelSync::head_unit() const {
  return SyncUnit{"head.", end_parameters_per_rank(ctx_.arch, ctx_.shard.tp, false, true), false};
}

std::vector<OpId> DataParallelSync::compute_tails(const ProgramBuilder& b) const {
  std::vector<OpId> tails;
  for (const Stream stream : {Stream::kCompute, Stream::kCompute2}) {
    if (const std::optional<OpId> last = b.last_on(stream)) tails.push_back(*last);
  }
  return tails;
}

void DataParallelSync::gather(ProgramBuilder& b, const SyncUnit& unit, const std::string& pass) {
  // At most one unit ahead: it follows the kernel that read the previous unit's gathered parameters.
  std::vector<OpId> after;
  if (const std::optional<OpId> reader = b.weights_reader()) after.push_back(*reader);
  // The unit's whole bf16 parameters gathered from their 1/dp shards.
  const OpId gathered = b.data_collective(unit.name + "fsdp." + pass + "all_gather", CollectiveKind::kAllGather,
                                          kBf16Bytes * unit.parameters, dp_.shard_group(), Stream::kComm3,
                                          std::to_string(static_cast<int64_t>(unit.parameters)) + " params", {}, after);
  b.wait_for_weights(gathered);
}

void DataParallelSync::before_forward(ProgramBuilder& b, const SyncUnit& unit) {
  if (dp_.enabled() && dp_.fsdp) gather(b, unit, "");
}

void DataParallelSync::before_backward(ProgramBuilder& b, const SyncUnit& unit) {
  if (dp_.enabled() && dp_.fsdp && unit.reshards) gather(b, unit, "backward.");
}

void DataParallelSync::after_backward(ProgramBuilder& b, const SyncUnit& unit, int64_t microbatch) {
  if (!dp_.enabled()) return;
  const double bytes = dp_.reduce_bytes * unit.parameters;
  if (dp_.fsdp) {
    // The gradient of the whole unit in, this rank's 1/shard_degree shard out; under hybrid sharding that shard
    // is then all-reduced over the replicas that hold it.
    const std::string grads = std::to_string(static_cast<int64_t>(unit.parameters)) + " grads";
    reductions_.push_back(b.data_collective(unit.name + "fsdp.reduce_scatter", CollectiveKind::kReduceScatter, bytes,
                                            dp_.shard_group(), Stream::kComm4, grads, compute_tails(b)));
    if (dp_.hybrid()) {
      reductions_.push_back(b.data_collective(unit.name + "hsdp.all_reduce", CollectiveKind::kAllReduce,
                                              bytes / dp_.shard_degree, dp_.replicate_group(), Stream::kComm4, grads,
                                              {reductions_.back()}));
    }
    return;
  }
  if (microbatch + 1 < ctx_.workload.microbatches) return;  // accumulated locally (no_sync)
  bucket_bytes_ += bytes;
  bucket_reads_ = compute_tails(b);
  if (bucket_bytes_ >= (buckets_ == 0 ? kDdpFirstBucketBytes : dp_.bucket_bytes)) flush_bucket(b);
}

void DataParallelSync::flush_bucket(ProgramBuilder& b) {
  if (bucket_bytes_ <= 0) return;
  const int saved_module = b.module();
  b.set_module(-1);  // a bucket spans layers: named by its number, not a layer
  reductions_.push_back(b.data_collective(
      "ddp.bucket" + std::to_string(buckets_) + ".all_reduce", CollectiveKind::kAllReduce, bucket_bytes_, dp_,
      Stream::kComm4, std::to_string(static_cast<int64_t>(bucket_bytes_ / dp_.reduce_bytes)) + " grads",
      bucket_reads_));
  b.set_module(saved_module);
  ++buckets_;
  bucket_bytes_ = 0;
}

std::optional<OpId> DataParallelSync::finish(ProgramBuilder& b) {
  if (dp_.enabled() && !dp_.fsdp) flush_bucket(b);
  if (reductions_.empty()) return std::nullopt;
  return reductions_.back();
}

}  // namespace tpsim::model
