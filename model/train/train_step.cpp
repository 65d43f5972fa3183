// The training step's op order: micro-batches in turn (forward, backward), then clipping and AdamW.
#include "model/train/train_step.hpp"

#include "model/layers/decoder_layer.hpp"
#include "model/layers/lm_head.hpp"
#include "model/memory/parameter_count.hpp"
#include "model/moe/combined_1f1b.hpp"
#include "model/moe/two_batch_step.hpp"
#include "model/train/ddp_fsdp_sync.hpp"
#include "model/train/selective_recompute.hpp"

namespace tpsim::model {
namespace {

// Gradient clipping (its norm over the local gradients, the all-reduce of the squared norm across the
// TP group, the scaling) and AdamW: torch.optim.AdamW reads weight, gradient and both moments and
// writes weight and moments; the bf16 copy of the weights is written after it.
// Under FSDP each rank holds a 1/dp shard of every parameter, under the distributed optimizer a shard of the
// gradients and state: its norm's square is all-reduced over the data-parallel group too. `synced`: the step's last
// gradient reduction over that group, which it reads.
void optimizer_step(ProgramBuilder& b, const LayerContext& ctx, bool communicates, std::optional<OpId> synced,
                    DataParallelSync& sync) {
  const DataParallel& dp = ctx.workload.data_parallel;
  const double p = sync.optimizer_parameters();
  const std::string shape = std::to_string(static_cast<int64_t>(p)) + " params";
  const double grads = kGradientBytesPerParameter * p, state = kAdamWStateBytesPerParameter * p;
  const OpId norm = b.memory("optimizer.grad_norm", grads, 0.0, 2.0 * p, shape,
                             synced ? std::vector<OpId>{*synced} : std::vector<OpId>{});
  OpId total = communicates ? b.collective("optimizer.grad_norm.all_reduce", CollectiveKind::kAllReduce, sizeof(float),
                                           "[1]", {norm})
                            : norm;
  if (dp.sharded_norm()) {
    total = b.data_collective(dp.fsdp ? "optimizer.grad_norm.fsdp.all_reduce" : "optimizer.grad_norm.dp.all_reduce",
                              CollectiveKind::kAllReduce, sizeof(float), dp, Stream::kComm4, "[1]", {total});
  }
  const OpId clipped = b.memory(kClipOpName, grads, grads, p, shape, {total});
  // Reads the gradient and the state, writes the state and the bf16 copy.
  const OpId update = b.memory("optimizer.adamw", grads + state, state + kBf16Bytes * p, 12.0 * p, shape, {clipped});
  sync.after_optimizer(b, update);
}

// Every op of the forward that a module's backward reads.
std::vector<OpId*> reads_of(SavedModule& saved) {
  std::vector<OpId*> reads;
  if (saved.input.ready) reads.push_back(&*saved.input.ready);
  for (std::vector<OpId>* list : {&saved.column_input, &saved.column_output, &saved.inner, &saved.row_input,
                                  &saved.shared.column_input, &saved.shared.column_output, &saved.shared.inner}) {
    for (OpId& id : *list) reads.push_back(&id);
  }
  return reads;
}

// Selective recomputation before a layer's backward: the unsaved ops of its forward span that the
// backward of its two modules reads, re-issued; the saved records re-pointed at them (cache_kept: eager blocks,
// selective_recompute.hpp).
void recompute_selected(ProgramBuilder& b, const SaveList& save, bool cache_kept, ForwardSpan span, SavedModule& attn,
                        SavedModule& ffn) {
  std::vector<OpId> needed;
  for (SavedModule* module : {&attn, &ffn}) {
    for (const OpId* id : reads_of(*module)) needed.push_back(*id);
  }
  const std::map<OpId, OpId> reissued = recompute_unsaved(b, span, needed, save, cache_kept);
  for (SavedModule* module : {&attn, &ffn}) {
    for (OpId* id : reads_of(*module)) {
      if (const auto again = reissued.find(*id); again != reissued.end()) *id = again->second;
    }
  }
}

// Whether the program's `layer` re-runs its forward before its backward: every layer under full recomputation, or
// the first recompute_layers of them.
bool recomputes_fully(const Workload& w, int64_t layer) {
  return w.recompute == Recompute::kFull && (w.recompute_layers == 0 || layer < w.recompute_layers);
}

// One micro-batch: forward through every layer, then backward in reverse.
void micro_batch(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& strategy, DataParallelSync& sync, int64_t mb) {
  const int64_t layers = ctx.workload.layers;
  const bool selective = ctx.workload.recompute == Recompute::kSelective;
  std::vector<SavedModule> saved(static_cast<size_t>(2 * layers));
  std::vector<ModuleInput> layer_input(static_cast<size_t>(layers));
  std::vector<ForwardSpan> span(static_cast<size_t>(layers));
  b.set_stage(OpStage::kForward);
  b.set_module(-1);
  ModelEnds ends(ctx, strategy);
  // A later pipeline stage's input is the previous stage's output, there when its program starts.
  if (ctx.workload.embedding) sync.before_forward(b, sync.embedding_unit());
  ModuleInput hidden = ctx.workload.embedding ? embedding_forward(b, ends.ctx(), ends.strategy()) : ModuleInput{};
  for (int64_t layer = 0; layer < layers; ++layer) {
    b.set_layer(static_cast<int>(layer));
    b.set_module(static_cast<int>(2 * layer));
    sync.before_forward(b, sync.layer_unit(layer));
    layer_input[layer] = hidden;
    span[layer].begin = static_cast<OpId>(b.graph().size());
    const bool full_recompute = recomputes_fully(ctx.workload, layer);
    SavedModule* attn = full_recompute ? nullptr : &saved[2 * layer];
    SavedModule* ffn = full_recompute ? nullptr : &saved[2 * layer + 1];
    hidden = layer_forward(b, ctx, strategy, layer, hidden, attn, ffn);
    span[layer].end = static_cast<OpId>(b.graph().size());
  }
  b.set_module(-1);
  ModuleInput grad = hidden;  // an earlier stage's output gradient: after its forward, from the next stage
  if (ctx.workload.head) {
    sync.before_forward(b, sync.head_unit());
    const SavedHead head = head_forward(b, ends.ctx(), ends.strategy(), hidden);
    b.set_stage(OpStage::kBackward);
    grad = head_backward(b, ends.ctx(), ends.strategy(), head);
    sync.after_backward(b, sync.head_unit(), mb);
  }
  b.set_stage(OpStage::kBackward);
  for (int64_t layer = layers - 1; layer >= 0; --layer) {
    b.set_layer(static_cast<int>(layer));
    b.set_module(static_cast<int>(2 * layer));
    sync.before_backward(b, sync.layer_unit(layer));
    if (recomputes_fully(ctx.workload, layer)) {
      // The layer's forward again from its saved input, its collectives too, before its backward.
      b.set_stage(OpStage::kRecompute);
      layer_forward(b, ctx, strategy, layer, layer_input[layer], &saved[2 * layer], &saved[2 * layer + 1], false);
      b.set_stage(OpStage::kBackward);
    } else if (selective) {
      b.set_stage(OpStage::kRecompute);
      recompute_selected(b, ctx.workload.save, !ctx.workload.implementation.compiled, span[layer], saved[2 * layer],
                         saved[2 * layer + 1]);
      b.set_stage(OpStage::kBackward);
    }
    grad = layer_backward(b, ctx, strategy, layer, saved[2 * layer], saved[2 * layer + 1], grad);
    sync.after_backward(b, sync.layer_unit(layer), mb);
  }
  b.set_module(-1);
  if (ctx.workload.embedding) {
    sync.before_backward(b, sync.embedding_unit());
    embedding_backward(b, ends.ctx(), ends.strategy(), grad);
    sync.after_backward(b, sync.embedding_unit(), mb);
  }
}

}  // namespace

void build_train_step(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& strategy) {
  DataParallelSync sync(ctx);
  const bool weights_cached = b.fp8_weights_cached();  // before the step (a pipeline stage's passes)
  if (ctx.variant.overlap_moe_expert_parallel_comm && ctx.workload.microbatches > 0) {
    build_combined_1f1b_micro_batches(b, ctx, strategy, sync);
  }
  for (int64_t mb = 0; mb < (ctx.variant.overlap_moe_expert_parallel_comm ? 0 : ctx.workload.microbatches); ++mb) {
    const std::string prefix = ctx.workload.microbatches > 1 ? "mb" + std::to_string(mb) + "." : "";
    b.set_name_prefix(prefix);
    b.set_fp32_weight_gradients(true, mb > 0);
    b.set_fp8_weights_cached(weights_cached || mb > 0);
    sync.set_micro_batch(mb);
    if (ctx.variant.two_batch_overlap) {
      two_batch_micro_batch(b, ctx, strategy, sync, mb, prefix);
    } else {
      micro_batch(b, ctx, strategy, sync, mb);
    }
    // The later micro-batches issue about as many ops as the first: room for them and one more (the optimizer's and the
    // data-parallel synchronisation's), so that the program's ops are not moved again as it grows.
    if (mb == 0) b.reserve(b.graph().size() * static_cast<size_t>(ctx.workload.microbatches + 1));
  }
  b.set_name_prefix("");
  const std::optional<OpId> synced = sync.finish(b);
  b.set_fp32_weight_gradients(false, false);
  b.set_fp8_weights_cached(weights_cached);
  b.set_name_prefix("");
  b.set_module(-1);
  if (ctx.workload.optimizer) {
    b.set_stage(OpStage::kOptimizer);
    optimizer_step(b, ctx, strategy.communicates(), synced, sync);
  }
}

}  // namespace tpsim::model
