// A pass's program: the variant's TP strategy and context, the layers' modules in order (forward and
// prefill passes, decode steps), or a training step (train_step.hpp).
#include "model/graph_builder.hpp"

#include <memory>

#include "model/decoder_layer.hpp"
#include "model/lm_head.hpp"
#include "model/program_builder.hpp"
#include "model/train_step.hpp"

namespace tpsim::model {

LayerGraph build_pass_graph(const ArchSpec& arch, const Workload& workload, const Pass& pass, int tp,
                            const Variant& variant) {
  if (workload.phase == Phase::kOps) {
    return build_op_list_graph(workload.ops, tp, workload.dtype, variant.algorithm, variant.protocol);
  }
  LayerContext ctx;
  ctx.arch = arch;
  ctx.shard = shard_for_tp(arch, tp, workload.expert_parallel.degree);
  ctx.workload = workload;
  ctx.pass = pass;
  ctx.variant = variant;
  ctx.tokens = pass.tokens();
  const std::unique_ptr<TpStrategy> strategy = make_tp_strategy(variant, static_cast<int>(2 * workload.layers));
  ctx.sequence_sharded = strategy->shards_sequence(ctx.tokens, tp);
  ctx.local_tokens = ctx.sequence_sharded ? ctx.tokens / tp : ctx.tokens;
  ctx.elem_bytes = dtype_bytes(workload.dtype);
  strategy->check(ctx);

  LayerGraph graph(tp);
  ProgramBuilder builder(graph, ctx.elem_bytes);
  builder.set_collective_algorithm(variant.algorithm);
  builder.set_collective_protocol(variant.protocol);
  builder.set_gemm_fp8(workload.dtype == Dtype::kFp8);
  builder.set_fp8_recipe(workload.fp8_recipe);
  builder.set_attention_fp8(workload.attention_dtype == Dtype::kFp8);
  set_projection_parts(builder, ctx);
  if (workload.phase == Phase::kTrain) {
    build_train_step(builder, ctx, *strategy);
    return graph;
  }
  ModelEnds ends(ctx, *strategy);
  ModuleInput hidden;
  builder.set_module(-1);
  if (workload.whole_model) hidden = embedding_forward(builder, ends.ctx(), ends.strategy());
  for (int64_t layer = 0; layer < workload.layers; ++layer) {
    builder.set_layer(static_cast<int>(layer));
    builder.set_module(static_cast<int>(2 * layer));
    hidden = attention_forward(builder, ctx, *strategy, strategy->enter_module(builder, ctx, hidden), nullptr);
    builder.set_module(static_cast<int>(2 * layer + 1));
    hidden = ffn_forward(builder, ctx, *strategy, strategy->enter_module(builder, ctx, hidden), nullptr);
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
  const OpId normed = rms_norm(builder, "final.norm", ctx.local_tokens, arch.hidden, hidden.deps());
  strategy->finish_pass(builder, ctx, normed);
  return graph;
}

LayerGraph build_layer_graph(const ArchSpec& arch, const Workload& workload, int tp, const Variant& variant) {
  return build_pass_graph(arch, workload, primary_pass(workload), tp, variant);
}

}  // namespace tpsim::model
