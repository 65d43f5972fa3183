// sp and async TP: the residual stream sharded on the sequence, gathered for column-parallel GEMMs and
// scattered after row-parallel ones, as blocking collectives or as async_tp.hpp's pipelines; in the
// backward the other way round (the gradient of an all-gather is a reduce-scatter and vice versa).
#include "model/parallel/sequence_parallel.hpp"

#include <algorithm>

#include "base/input_error.hpp"
#include "model/parallel/async_tp.hpp"
#include "model/parallel/userbuffers.hpp"

namespace tpsim::model {
namespace {

class SequenceParallelStrategy : public TpStrategy {
 public:
  bool shards_sequence(int64_t /*tokens*/, int /*tp*/) const override { return true; }
  void check(const LayerContext& ctx) const override {
    const int tp = ctx.shard.tp;
    if (ctx.tokens % tp != 0) {
      throw InputError(
          "variant " + ctx.variant.name + ": tokens of a pass (batch x new tokens = " + std::to_string(ctx.tokens) +
          ") must be divisible by tp=" + std::to_string(tp) + " to shard the sequence; use tp_mode tp or dtp");
    }
  }
  // gather_then_gemm and gemm_then_scatter run the blocking collectives, or the pipelines when the
  // variant is fused async TP. The weight gradient reads the gathered input, which autograd saves.
  ColumnOutput column_forward(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear,
                              const ModuleInput& input) override {
    const OpId normed = norm_of(b, ctx, linear, input);
    const std::vector<OpId> output = gather_then_gemm(b, ctx, linear.gemm_name, column_shape(ctx, linear), normed);
    return {output, gemm_inputs(b, output, normed)};
  }
  ModuleInput row_forward(ProgramBuilder& b, const LayerContext& ctx, const RowLinear& linear,
                          const std::vector<OpId>& inputs, const ModuleInput& residual) override {
    const std::vector<OpId> reduced = gemm_then_scatter(b, ctx, linear.gemm_name, row_shape(ctx, linear), inputs);
    return residual_stream(b, ctx, linear.module + ".residual", reduced, residual.ready);
  }
  // The output gradient is sharded like the stream: all-gathered (or pipelined into the data-gradient
  // GEMM), and the gathered gradient feeds the weight gradient.
  std::vector<OpId> row_backward(ProgramBuilder& b, const LayerContext& ctx, const RowLinear& linear,
                                 const ModuleInput& grad, const std::vector<OpId>& saved_input) override {
    const GemmShape forward = row_shape(ctx, linear);
    const std::vector<OpId> dgrad =
        gather_then_gemm(b, ctx, linear.gemm_name + ".dgrad", data_gradient_shape(forward), grad.ready);
    weight_gradient(b, linear.gemm_name, forward, gemm_inputs(b, dgrad, grad.ready), saved_input);
    return dgrad;
  }
  // The data gradient's partial sums are reduce-scattered to the rank's rows (or pipelined, or TE's bulk overlaps
  // under userbuffers) while wgrad runs;
  // in autograd's order the blocking reduce-scatter waits for wgrad. PyTorch's fused ops cannot take the summed
  // gradient of a linear run as separate GEMMs: it is reduce-scattered by NCCL under async too.
  std::vector<OpId> column_input_gradient(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear,
                                          const std::vector<OpId>& grad_out,
                                          const std::vector<OpId>& saved_input) override {
    if (uses_userbuffers(ctx)) return bulk_column_input_gradient(b, ctx, linear, grad_out, saved_input);
    const GemmShape forward = column_shape(ctx, linear), shape = data_gradient_shape(forward);
    const std::string name = linear.gemm_name + ".dgrad";
    const Implementation& implementation = ctx.workload.implementation;
    const bool unfusable = implementation.async_tp == AsyncTpKernel::kSymmMem && b.has_linear_parts(linear.gemm_name);
    // The weight gradient reads the saved gathered input: fp8 already under the float8 TP plan.
    // Transformer Engine's linears (and Megatron's ColumnParallelLinear) gather the saved rows again first.
    const bool regathers = implementation.saved_gemm_inputs == SavedGemmInputs::kTransformerEngine &&
                           !(fused_async(ctx.variant) && !unfusable);
    const std::vector<OpId> wgrad_input = regathers ? regathered_input(b, linear, saved_input) : saved_input;
    const auto wgrad = [&] {
      b.set_a_quantised(gathers_fp8(b, ctx));
      const OpId id = weight_gradient(b, linear.gemm_name, forward, grad_out, wgrad_input);
      b.set_a_quantised(false);
      return id;
    };
    if (fused_async(ctx.variant) && !unfusable) {
      std::vector<OpId> reduced = gemm_then_scatter(b, ctx, name, shape, grad_out);
      wgrad();
      return reduced;
    }
    const OpId dgrad = b.gemm(name, shape, grad_out);
    if (implementation.backward_order == BackwardOrder::kAutograd) {
      const OpId weight = wgrad();
      return {scatter_product(b, ctx, name, shape, dgrad, {weight})};
    }
    const OpId reduced = scatter_product(b, ctx, name, shape, dgrad);
    wgrad();
    return {reduced};
  }

 protected:
  // The input `saved_input` (a blocking GEMM's forward all-gather) gathered again from the rank's rows its forward
  // gather read, as Transformer Engine's _Linear.backward does (transformer_engine/pytorch/module/linear.py:
  // gather_along_first_dim(inputmat, ctx.tp_group, async_op=True), launched before the data-gradient GEMM and
  // waited on before the weight gradient's) and Megatron's LinearWithGradAccumulationAndAsyncCommunication.backward
  // (megatron/core/tensor_parallel/layers.py: dist_all_gather_func(all_gather_buffer, input, async_op=True)). Units
  // that are no TP all-gather (a pipeline's pieces) are read as they are.
  static std::vector<OpId> regathered_input(ProgramBuilder& b, const ColumnLinear& linear,
                                            const std::vector<OpId>& saved_input) {
    std::vector<OpId> out;
    for (const OpId id : saved_input) {
      const Op& op = b.graph().op(id);
      const bool gather = op.kind == OpKind::kCollective && op.collective == CollectiveKind::kAllGather &&
                          op.group == CommGroup::kTensor;
      if (!gather) {
        out.push_back(id);
        continue;
      }
      const double bytes = op.tensor_bytes;
      const std::string shape = op.shape;
      out.push_back(b.collective(linear.gemm_name + ".input.all_gather", CollectiveKind::kAllGather, bytes, shape,
                                 b.graph().data_inputs(id)));
    }
    return out;
  }

  // The GEMM's gathered input, which the weight gradient reads: the all-gather feeding a blocking GEMM,
  // or every unit a pipeline's pieces read (the received steps, the local shard, or their normed pieces).
  // An fp8 recipe's casts are looked through: the autograd function saves the bf16 input.
  static std::vector<OpId> gemm_inputs(const ProgramBuilder& b, const std::vector<OpId>& gemm,
                                       std::optional<OpId> local) {
    std::vector<OpId> inputs;
    std::vector<OpId> pending(gemm.rbegin(), gemm.rend());
    std::vector<OpId> seen;
    while (!pending.empty()) {
      const OpId id = pending.back();
      pending.pop_back();
      for (const OpId input : b.graph().data_inputs(id)) {
        // Looked through: an fp8 recipe's casts, and the earlier parts of a linear run as several GEMMs.
        const Op& op = b.graph().op(input);
        if (op.quantisation || op.kind == OpKind::kGemm) {
          if (std::find(seen.begin(), seen.end(), input) == seen.end()) {
            seen.push_back(input);
            pending.push_back(input);
          }
        } else if (std::find(inputs.begin(), inputs.end(), input) == inputs.end()) {
          inputs.push_back(input);
        }
      }
    }
    if (inputs.empty() && local) inputs.push_back(*local);
    return inputs;
  }
};

// Async TP: chunked pipelines; with boundary_overlap the all-gather moves before the RMSNorm, which
// then runs on each gathered piece.
class AsyncStrategy final : public SequenceParallelStrategy {
 public:
  void check(const LayerContext& ctx) const override {
    SequenceParallelStrategy::check(ctx);
    plan_chunks(ctx.tokens, ctx.shard.tp, ctx.variant.chunks);
  }
  ColumnOutput column_forward(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear,
                              const ModuleInput& input) override {
    if (fused_async(ctx.variant) && ctx.variant.boundary_overlap && !linear.normed) {
      const std::vector<OpId> pieces = async_gather_gemm(b, ctx, linear.gemm_name, column_shape(ctx, linear),
                                                         input.ready, PieceNorm{linear.norm_name});
      return {pieces, gemm_inputs(b, pieces, input.ready)};
    }
    return SequenceParallelStrategy::column_forward(b, ctx, linear, input);
  }
};

}  // namespace

std::unique_ptr<TpStrategy> make_sequence_parallel_strategy(const Variant& variant) {
  if (variant.mode == TpMode::kAsync) return std::make_unique<AsyncStrategy>();
  return std::make_unique<SequenceParallelStrategy>();
}

}  // namespace tpsim::model
