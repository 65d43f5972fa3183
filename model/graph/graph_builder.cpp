// A pass's program: the variant's TP strategy and context, the layers' modules in order (forward and
// prefill passes, decode steps), or a training step (train_step.hpp).
#include "model/graph/graph_builder.hpp"

#include <memory>

#include "base/input_error.hpp"
#include "model/graph/program_builder.hpp"
#include "model/layers/decoder_layer.hpp"
#include "model/layers/lm_head.hpp"
#include "model/moe/two_batch_step.hpp"
#include "model/train/train_step.hpp"

namespace tpsim::model {

namespace {

// The context of one pass (or of one micro-batch's part of it) under `strategy`.
LayerContext pass_context(const ArchSpec& arch, const Workload& workload, const Pass& pass, int tp,
                          const Variant& variant, const TpStrategy& strategy) {
  LayerContext ctx;
  ctx.arch = arch;
  ctx.shard = shard_for_tp(arch, tp, workload.expert_parallel.degree, workload.expert_parallel.tensor_degree);
  ctx.workload = workload;
  ctx.pass = pass;
  ctx.variant = variant;
  ctx.tokens = pass.tokens();
  ctx.sequence_sharded = strategy.shards_sequence(ctx.tokens, tp);
  ctx.local_tokens = ctx.sequence_sharded ? ctx.tokens / tp : ctx.tokens;
  ctx.elem_bytes = dtype_bytes(workload.dtype);
  strategy.check(ctx);
  check_parallel_residual(ctx);
  return ctx;
}

// Two-batch overlap (variant.two_batch_overlap): the pass as two micro-batches of half its sequences (`ctx`, ops named
// mb0., mb1.), so that each micro-batch's all-to-alls run beside the other's compute: a decode step in SGLang's
// decode order, other passes each layer's attention modules one after the other and its MoE stages interleaved
// (dispatch 0, dispatch 1, experts 0, experts 1, combine 0, combine 1) (two_batch_step.hpp).
void build_two_batch_layers(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& strategy) {
  const HalfBatches halves(b, "", {"mb0.", "mb1."});
  std::array<ModuleInput, 2> hidden;
  if (runs_decode_order(ctx)) {
    two_half_decode_layers(b, ctx, strategy, halves, hidden);
  } else {
    for (int64_t layer = 0; layer < ctx.workload.layers; ++layer) {
      b.set_layer(static_cast<int>(layer));
      b.set_module(static_cast<int>(2 * layer));
      two_half_layer_forward(b, ctx, strategy, halves, layer, hidden, nullptr);
    }
  }
  b.set_module(-1);
  halves.each([&](int h) {
    const OpId normed = stream_norm(b, ctx, "final.norm", hidden[h]);
    strategy.finish_pass(b, ctx, normed);
  });
}

}  // namespace

LayerGraph build_pass_graph(const ArchSpec& arch, const Workload& workload, const Pass& pass, int tp,
                            const Variant& variant) {
  if (workload.phase == Phase::kOps) {
    return build_op_list_graph(workload.ops, tp, workload.dtype, variant.algorithm, variant.protocol);
  }
  const std::unique_ptr<TpStrategy> strategy = make_tp_strategy(variant, static_cast<int>(2 * workload.layers));
  const LayerContext ctx = pass_context(arch, workload, pass, tp, variant, *strategy);

  LayerGraph graph(tp);
  ProgramBuilder builder(graph, ctx.elem_bytes);
  builder.set_first_layer(workload.first_layer);
  builder.set_collective_algorithm(variant.algorithm);
  builder.set_collective_protocol(variant.protocol);
  builder.set_gemm_fp8(workload.dtype == Dtype::kFp8);
  builder.set_fp8_recipe(workload.fp8_recipe);
  builder.set_weights_fp8(workload.data_parallel.fp8_all_gather);  // the loader allows it under per-tensor scales only
  builder.set_fp8_kernels(workload.implementation.fp8_kernels);
  builder.set_fp8_weights_cached(workload.fp8_weights_cached);
  builder.set_autocast(workload.implementation.autocast);
  builder.set_attention_fp8(workload.attention_dtype == Dtype::kFp8);
  if (variant.two_batch_overlap && workload.whole_model && workload.phase != Phase::kTrain) {
    throw InputError("variant " + variant.name + ": two_batch_overlap does not run the model's ends (whole_model)");
  }
  // Under two-batch overlap the layers are built for half the pass's sequences, each half in turn.
  Pass half = pass;
  half.batch = pass.batch / 2;
  const LayerContext layer_ctx =
      variant.two_batch_overlap ? pass_context(arch, workload, half, tp, variant, *strategy) : ctx;
  if (workload.phase == Phase::kTrain) {
    set_projection_parts(builder, layer_ctx);
    build_train_step(builder, layer_ctx, *strategy);
    return graph;
  }
  if (variant.two_batch_overlap) {
    set_projection_parts(builder, layer_ctx);
    build_two_batch_layers(builder, layer_ctx, *strategy);
    return graph;
  }
  set_projection_parts(builder, ctx);
  ModelEnds ends(ctx, *strategy);
  ModuleInput hidden;
  builder.set_module(-1);
  if (workload.whole_model) hidden = embedding_forward(builder, ends.ctx(), ends.strategy());
  for (int64_t layer = 0; layer < workload.layers; ++layer) {
    builder.set_layer(static_cast<int>(layer));
    hidden = layer_forward(builder, ctx, *strategy, layer, hidden, nullptr, nullptr);
  }
  builder.set_module(-1);
  if (workload.whole_model) {
    if (workload.is_inference()) {
      head_inference(builder, ends.ctx(), ends.strategy(), hidden);
    } else {
      head_forward(builder, ends.ctx(), ends.strategy(), hidden);
    }
    return graph;
  }
  const OpId normed = stream_norm(builder, ctx, "final.norm", hidden);
  strategy->finish_pass(builder, ctx, normed);
  return graph;
}

LayerGraph build_layer_graph(const ArchSpec& arch, const Workload& workload, int tp, const Variant& variant) {
  return build_pass_graph(arch, workload, primary_pass(workload), tp, variant);
}

}  // namespace tpsim::model
