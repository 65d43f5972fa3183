// FSDP's per-unit all-gathers and reduce-scatters, and DDP's bucketed all-reduces, in a step's program.
#include "model/train/ddp_fsdp_sync.hpp"

#include <algorithm>

#include "model/memory/parameter_count.hpp"

namespace tpsim::model {

DataParallelSync::DataParallelSync(const LayerContext& ctx) : ctx_(ctx), dp_(ctx.workload.data_parallel) {
  dense_.name = "ddp";
  dense_.group = dp_;
  experts_.name = "ddp.experts";
  experts_.group = dp_;
  // The GPUs holding the same experts (slices): one per expert-parallel group, each group ep x etp GPUs made of
  // whole TP groups of consecutive replicas (the loader's rule; expert TP, whose slices sync with the dense
  // parameters, aside), so its members are that many replicas apart wherever parallelism.order puts the replicas.
  const int group = ctx.workload.expert_parallel.degree * ctx.workload.expert_parallel.slices();
  const int replicas_per_group = std::max(1, group / ctx.shard.tp);
  experts_.group.degree = dp_.degree / replicas_per_group;
  experts_.group.member_stride = replicas_per_group * dp_.member_stride;
}

SyncUnit DataParallelSync::layer_unit(int64_t layer) const {
  // TorchTitan keeps the last layer gathered after its forward: its backward follows at once.
  const int64_t model_layer = ctx_.workload.first_layer + layer;
  return SyncUnit{"", layer_parameters_at(ctx_.arch, ctx_.shard, model_layer),
                  expert_parameters_at(ctx_.arch, ctx_.shard, model_layer),
                  dp_.reshard_after_forward && layer + 1 < ctx_.workload.layers};
}

SyncUnit DataParallelSync::embedding_unit() const {
  return SyncUnit{"embedding.", end_parameters_per_rank(ctx_.arch, ctx_.shard.tp, true, false), 0,
                  dp_.reshard_after_forward};
}

SyncUnit DataParallelSync::head_unit() const {
  return SyncUnit{"head.", end_parameters_per_rank(ctx_.arch, ctx_.shard.tp, false, true), 0, false};
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
  if (dp_.fsdp) {
    const double bytes = dp_.reduce_bytes * unit.parameters;
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
  fill_bucket(b, dense_, dp_.reduce_bytes * (unit.parameters - unit.expert_parameters));
  if (experts_.group.enabled()) fill_bucket(b, experts_, dp_.reduce_bytes * unit.expert_parameters);
}

void DataParallelSync::fill_bucket(ProgramBuilder& b, Buckets& buckets, double bytes) {
  if (bytes <= 0) return;
  buckets.bytes += bytes;
  buckets.reads = compute_tails(b);
  if (buckets.bytes >= (buckets.issued == 0 ? kDdpFirstBucketBytes : dp_.bucket_bytes)) flush_bucket(b, buckets);
}

void DataParallelSync::flush_bucket(ProgramBuilder& b, Buckets& buckets) {
  if (buckets.bytes <= 0) return;
  const int saved_module = b.module();
  b.set_module(-1);  // a bucket spans layers: named by its number, not a layer
  reductions_.push_back(b.data_collective(
      buckets.name + ".bucket" + std::to_string(buckets.issued) + ".all_reduce", CollectiveKind::kAllReduce,
      buckets.bytes, buckets.group, Stream::kComm4,
      std::to_string(static_cast<int64_t>(buckets.bytes / dp_.reduce_bytes)) + " grads", buckets.reads));
  b.set_module(saved_module);
  ++buckets.issued;
  buckets.bytes = 0;
}

std::optional<OpId> DataParallelSync::finish(ProgramBuilder& b) {
  if (dp_.enabled() && !dp_.fsdp) {
    flush_bucket(b, dense_);
    flush_bucket(b, experts_);
  }
  if (reductions_.empty()) return std::nullopt;
  return reductions_.back();
}

}  // namespace tpsim::model
