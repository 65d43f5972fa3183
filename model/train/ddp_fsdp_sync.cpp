// FSDP's per-unit all-gathers and reduce-scatters, DDP's bucketed all-reduces and the distributed optimizer's
// bucketed reduce-scatters and all-gathers, in a step's program.
#include "model/train/ddp_fsdp_sync.hpp"

#include <algorithm>

#include "model/memory/parameter_count.hpp"

namespace tpsim::model {

DataParallelSync::DataParallelSync(const LayerContext& ctx) : ctx_(ctx), dp_(ctx.workload.data_parallel) {
  dense_.name = "ddp";
  dense_.group = dp_;
  experts_.name = "ddp.experts";
  // The GPUs holding the same experts (slices): one per expert-parallel group, each group ep x etp GPUs made of
  // whole TP groups of consecutive replicas (the loader's rule; expert TP, whose slices sync with the dense
  // parameters, aside), so its members are that many replicas apart wherever parallelism.order puts the replicas.
  experts_.group =
      expert_data_group(dp_, ctx.workload.expert_parallel.degree * ctx.workload.expert_parallel.slices(), ctx.shard.tp);
  if (dp_.enabled() && dp_.distributed_optimizer) plan_zero_buffers();
}

SyncUnit DataParallelSync::layer_unit(int64_t layer) const {
  // TorchTitan keeps the last layer gathered after its forward: its backward follows at once.
  const int64_t model_layer = ctx_.workload.first_layer + layer;
  const double fp8 =
      dp_.fp8_all_gather ? linear_parameters_per_layer(ctx_.arch, ctx_.shard, ctx_.arch.kind(model_layer)) : 0.0;
  return SyncUnit{"",
                  layer,
                  layer_parameters_at(ctx_.arch, ctx_.shard, model_layer),
                  expert_parameters_at(ctx_.arch, ctx_.shard, model_layer),
                  dp_.reshard_after_forward && layer + 1 < ctx_.workload.layers,
                  fp8};
}

SyncUnit DataParallelSync::embedding_unit() const {
  return SyncUnit{"embedding.", -1, end_parameters_per_rank(ctx_.arch, ctx_.shard.tp, true, false), 0,
                  dp_.reshard_after_forward};
}

SyncUnit DataParallelSync::head_unit() const {
  return SyncUnit{"head.", ctx_.workload.layers, end_parameters_per_rank(ctx_.arch, ctx_.shard.tp, false, true), 0,
                  false};
}

std::vector<SyncUnit> DataParallelSync::units_backward() const {
  std::vector<SyncUnit> units;
  if (ctx_.workload.head) units.push_back(head_unit());
  for (int64_t layer = ctx_.workload.layers - 1; layer >= 0; --layer) units.push_back(layer_unit(layer));
  if (ctx_.workload.embedding) units.push_back(embedding_unit());
  return units;
}

double DataParallelSync::separate_experts(const SyncUnit& unit) const {
  return experts_.group.degree != dp_.degree ? unit.expert_parameters : 0.0;
}

double DataParallelSync::optimizer_parameters() const {
  const bool moe_fsdp = dp_.enabled() && dp_.fsdp && experts_.group.degree != dp_.degree;
  if (!dp_.enabled() || (!dp_.distributed_optimizer && !moe_fsdp)) {
    return (layer_parameters_per_rank(ctx_.arch, ctx_.shard, {ctx_.workload.first_layer, ctx_.workload.layers}) +
            end_parameters_per_rank(ctx_.arch, ctx_.shard.tp, ctx_.workload.embedding, ctx_.workload.head)) /
           dp_.shards();
  }
  double dense = 0, experts = 0;
  for (const SyncUnit& unit : units_backward()) {
    dense += unit.parameters - unit.expert_parameters;
    experts += unit.expert_parameters;
  }
  return dense / dp_.state_shards() + experts / experts_.group.degree;
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
  // The unit's whole bf16 parameters gathered from their 1/dp shards (its fp8 weights one byte each, cast first); an
  // MoE layer's experts from their shards over the expert-data-parallel group, after them on the same stream.
  const double experts = separate_experts(unit), dense = unit.parameters - experts;
  const std::vector<OpId> cast =
      unit.fp8_parameters > 0 ? std::vector<OpId>{cast_shards_to_fp8(b, unit, pass, after)} : std::vector<OpId>{};
  const double bytes = kBf16Bytes * (dense - unit.fp8_parameters) + kFp8Bytes * unit.fp8_parameters;
  OpId gathered =
      b.data_collective(unit.name + "fsdp." + pass + "all_gather", CollectiveKind::kAllGather, bytes, dp_.shard_group(),
                        Stream::kComm3, std::to_string(static_cast<int64_t>(dense)) + " params", cast, after);
  if (experts > 0 && experts_.group.enabled()) {
    gathered = b.data_collective(unit.name + "fsdp.experts." + pass + "all_gather", CollectiveKind::kAllGather,
                                 kBf16Bytes * experts, experts_.group, Stream::kComm3,
                                 std::to_string(static_cast<int64_t>(experts)) + " params", {}, after);
  }
  b.wait_for_weights(gathered);
}

int DataParallelSync::fp8_weights_per_layer() const {
  const Implementation& impl = ctx_.workload.implementation;
  // q, k and v (or one fused weight), o; gate and up (or one fused weight, or up alone), down.
  return (impl.separate_qkv ? 3 : 1) + 1 + (impl.separate_gate_up ? ctx_.arch.up_projections() : 1) + 1;
}

OpId DataParallelSync::cast_shards_to_fp8(ProgramBuilder& b, const SyncUnit& unit, const std::string& pass,
                                          const std::vector<OpId>& after) {
  // The fp32 shards (FSDP2's sharded parameters, the optimizer's master weights), 1/shard_degree of each weight.
  const double elements = unit.fp8_parameters / dp_.shard_degree;
  const std::string shape = std::to_string(static_cast<int64_t>(elements)) + " params";
  const std::string name = unit.name + "fsdp." + pass + "fp8_";
  std::vector<OpId> scales;
  if (!dp_.precompute_fp8_scales) {
    // torchao's hp_tensor_to_float8_dynamic(reduce_amax=True) per weight: its amax, all-reduced (MAX) over the mesh
    // FSDP passes to fsdp_pre_all_gather (the shard group), one scalar each.
    OpId amax =
        b.quantisation_on(Stream::kComm3, name + "amax", elements, kFp32Bytes * elements, 0.0, shape, {}, after);
    for (int weight = 0; weight < fp8_weights_per_layer(); ++weight) {
      amax = b.data_collective(name + "amax.w" + std::to_string(weight) + ".all_reduce", CollectiveKind::kAllReduce,
                               kFp32Bytes, dp_.shard_group(), Stream::kComm3, "[1]", {amax});
    }
    scales.push_back(amax);
  }
  return b.quantisation_on(Stream::kComm3, name + "cast", elements, kFp32Bytes * elements, kFp8Bytes * elements, shape,
                           scales, after);
}

void DataParallelSync::precompute_fp8_scales(ProgramBuilder& b, OpId update) {
  // torch._foreach_norm(weights, inf) over the local shards of every fp8 weight of the program, then the stacked
  // amaxes reduced as DTensor reduces a partial value, over each mesh dimension in turn (the shard group, the TP
  // group).
  double elements = 0;
  int weights = 0;
  for (int64_t layer = 0; layer < ctx_.workload.layers; ++layer) {
    elements += layer_unit(layer).fp8_parameters / dp_.shard_degree;
    weights += fp8_weights_per_layer();
  }
  const std::string shape = std::to_string(static_cast<int64_t>(elements)) + " params";
  const OpId amax = b.memory("fsdp.fp8_scales.amax", kFp32Bytes * elements, 0.0, elements, shape, {update});
  const std::string amaxes = "[" + std::to_string(weights) + "]";
  const OpId reduced = b.data_collective("fsdp.fp8_scales.all_reduce", CollectiveKind::kAllReduce, kFp32Bytes * weights,
                                         dp_.shard_group(), Stream::kComm4, amaxes, {amax});
  if (ctx_.shard.tp > 1) {
    b.collective("fsdp.fp8_scales.tp.all_reduce", CollectiveKind::kAllReduce, kFp32Bytes * weights, amaxes, {reduced});
  }
}

void DataParallelSync::before_forward(ProgramBuilder& b, const SyncUnit& unit) {
  if (dp_.enabled() && dp_.fsdp) gather(b, unit, "");
  if (dp_.enabled() && dp_.distributed_optimizer && dp_.overlap_param_gather && microbatch_ == 0) {
    zero_before_forward(b, unit);
  }
}

void DataParallelSync::before_backward(ProgramBuilder& b, const SyncUnit& unit) {
  if (dp_.enabled() && dp_.fsdp && unit.reshards) gather(b, unit, "backward.");
}

void DataParallelSync::after_backward(ProgramBuilder& b, const SyncUnit& unit, int64_t microbatch) {
  if (!dp_.enabled()) return;
  if (dp_.fsdp) {
    const double experts = separate_experts(unit), dense = unit.parameters - experts;
    const double bytes = dp_.reduce_bytes * dense;
    // The gradient of the whole unit in, this rank's 1/shard_degree shard out; under hybrid sharding that shard
    // is then all-reduced over the replicas that hold it. An MoE layer's experts over their own group.
    const std::string grads = std::to_string(static_cast<int64_t>(dense)) + " grads";
    const std::vector<OpId> tails = compute_tails(b);
    reductions_.push_back(b.data_collective(unit.name + "fsdp.reduce_scatter", CollectiveKind::kReduceScatter, bytes,
                                            dp_.shard_group(), Stream::kComm4, grads, tails));
    if (experts > 0 && experts_.group.enabled()) {
      reductions_.push_back(b.data_collective(unit.name + "fsdp.experts.reduce_scatter", CollectiveKind::kReduceScatter,
                                              dp_.reduce_bytes * experts, experts_.group, Stream::kComm4,
                                              std::to_string(static_cast<int64_t>(experts)) + " grads", tails));
    }
    if (dp_.hybrid()) {
      reductions_.push_back(b.data_collective(unit.name + "hsdp.all_reduce", CollectiveKind::kAllReduce,
                                              bytes / dp_.shard_degree, dp_.replicate_group(), Stream::kComm4, grads,
                                              {reductions_.back()}));
    }
    return;
  }
  if (microbatch + 1 < ctx_.workload.microbatches) return;  // accumulated locally (no_sync)
  if (dp_.distributed_optimizer) return zero_after_backward(b, unit);
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
  if (dp_.enabled() && dp_.distributed_optimizer) {
    // Without overlap_grad_reduce every bucket's reduce-scatter follows the whole backward.
    const std::vector<OpId> tails = compute_tails(b);
    for (ZeroBuffer& buffer : zero_) {
      for (const int bucket : buffer.pending_buckets) zero_reduce(b, buffer, bucket, tails);
      buffer.pending_buckets.clear();
    }
  } else if (dp_.enabled() && !dp_.fsdp) {
    flush_bucket(b, dense_);
    flush_bucket(b, experts_);
  }
  if (reductions_.empty()) return std::nullopt;
  return reductions_.back();
}

void DataParallelSync::plan_zero_buffers() {
  zero_[0].name = "zero1";
  zero_[0].group = dp_;
  zero_[1].name = "zero1.experts";
  zero_[1].group = experts_.group;
  const double size = dp_.bucket_size();
  for (size_t which = 0; which < zero_.size(); ++which) {
    ZeroBuffer& buffer = zero_[which];
    if (!buffer.group.enabled()) continue;  // experts on every GPU of the group: nothing to reduce or shard
    double open = 0;
    int64_t last = 0;
    for (const SyncUnit& unit : units_backward()) {
      const double params = which == 0 ? unit.parameters - unit.expert_parameters : unit.expert_parameters;
      if (params <= 0) continue;
      buffer.bucket_of[unit.position] = static_cast<int>(buffer.parameters.size());
      open += params;
      last = unit.position;
      if (open >= size) {
        buffer.parameters.push_back(open);
        buffer.closing.push_back(last);
        open = 0;
      }
    }
    if (open > 0) {
      buffer.parameters.push_back(open);
      buffer.closing.push_back(last);
    }
  }
}

void DataParallelSync::zero_gather(ProgramBuilder& b, ZeroBuffer& buffer, int bucket, const std::vector<OpId>& deps,
                                   const std::vector<OpId>& after) {
  const int saved_module = b.module();
  b.set_module(-1);  // a bucket spans layers: named by its number, not a layer
  const double params = buffer.parameters[static_cast<size_t>(bucket)];
  buffer.gathers[bucket] = b.data_collective(
      buffer.name + ".bucket" + std::to_string(bucket) + ".all_gather", CollectiveKind::kAllGather, kBf16Bytes * params,
      buffer.group, Stream::kComm3, std::to_string(static_cast<int64_t>(params)) + " params", deps, after);
  b.set_module(saved_module);
}

void DataParallelSync::zero_before_forward(ProgramBuilder& b, const SyncUnit& unit) {
  // A bucket's gather is issued when its first unit's forward is reached, following the kernel that read the
  // previous bucket (at most one bucket ahead); that unit's first kernel waits for it.
  std::optional<OpId> wait;
  for (ZeroBuffer& buffer : zero_) {
    const auto found = buffer.bucket_of.find(unit.position);
    if (found == buffer.bucket_of.end() || buffer.gathers.count(found->second)) continue;
    std::vector<OpId> after;
    if (const std::optional<OpId> reader = b.weights_reader()) after.push_back(*reader);
    zero_gather(b, buffer, found->second, {}, after);
    wait = buffer.gathers[found->second];  // issued after the other buffer's on the same stream
  }
  if (wait) b.wait_for_weights(*wait);
}

void DataParallelSync::zero_after_backward(ProgramBuilder& b, const SyncUnit& unit) {
  for (ZeroBuffer& buffer : zero_) {
    const auto found = buffer.bucket_of.find(unit.position);
    if (found == buffer.bucket_of.end()) continue;
    const int bucket = found->second;
    if (buffer.closing[static_cast<size_t>(bucket)] != unit.position) continue;  // its bucket is still filling
    if (dp_.overlap_grad_reduce) {
      zero_reduce(b, buffer, bucket, compute_tails(b));
    } else {
      buffer.pending_buckets.push_back(bucket);
    }
  }
}

void DataParallelSync::zero_reduce(ProgramBuilder& b, ZeroBuffer& buffer, int bucket, const std::vector<OpId>& reads) {
  const int saved_module = b.module();
  b.set_module(-1);
  const double params = buffer.parameters[static_cast<size_t>(bucket)];
  // The bucket's whole gradient in, this rank's 1/dp shard out (what its optimizer updates).
  reductions_.push_back(b.data_collective(buffer.name + ".bucket" + std::to_string(bucket) + ".reduce_scatter",
                                          CollectiveKind::kReduceScatter, dp_.reduce_bytes * params, buffer.group,
                                          Stream::kComm4, std::to_string(static_cast<int64_t>(params)) + " grads",
                                          reads));
  b.set_module(saved_module);
}

void DataParallelSync::after_optimizer(ProgramBuilder& b, OpId update) {
  if (dp_.enabled() && dp_.fsdp && dp_.precompute_fp8_scales && ctx_.workload.layers > 0) {
    precompute_fp8_scales(b, update);
  }
  if (!dp_.enabled() || !dp_.distributed_optimizer || dp_.overlap_param_gather) return;
  // Every bucket's updated shard gathered at once (Megatron's synchronous all-gathers after optimizer.step()).
  for (ZeroBuffer& buffer : zero_) {
    for (int bucket = static_cast<int>(buffer.parameters.size()) - 1; bucket >= 0; --bucket) {
      zero_gather(b, buffer, bucket, {update}, {});
    }
  }
}

}  // namespace tpsim::model
