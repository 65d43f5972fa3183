// sp and async TP: the residual stream sharded on the sequence, gathered for column-parallel GEMMs and
// scattered after row-parallel ones, as blocking collectives or as async_tp.hpp's pipelines.
#include "model/sequence_parallel.hpp"

#include "model/async_tp.hpp"
#include "model/input_error.hpp"

namespace tpsim::model {
namespace {

class SequenceParallelStrategy : public TpStrategy {
 public:
  bool shards_sequence(int64_t /*tokens*/, int /*tp*/) const override { return true; }
  void check(const LayerContext& ctx) const override {
    const int tp = ctx.shard.tp;
    if (ctx.tokens % tp != 0) {
      throw InputError("variant " + ctx.variant.name + ": tokens of a pass (batch x new tokens = " +
                       std::to_string(ctx.tokens) + ") must be divisible by tp=" + std::to_string(tp) +
                       " to shard the sequence; use tp_mode tp or dtp");
    }
  }
  // gather_then_gemm and gemm_then_scatter run the blocking collectives, or the pipelines when the
  // variant is fused async TP.
  std::vector<OpId> column_forward(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear,
                                   const ModuleInput& input) override {
    return gather_then_gemm(b, ctx, linear.gemm_name, column_shape(ctx, linear), norm_of(b, ctx, linear, input));
  }
  ModuleInput row_forward(ProgramBuilder& b, const LayerContext& ctx, const RowLinear& linear,
                          const std::vector<OpId>& inputs, const ModuleInput& residual) override {
    const std::vector<OpId> reduced = gemm_then_scatter(b, ctx, linear.gemm_name, row_shape(ctx, linear), inputs);
    return ModuleInput{
        residual_add(b, linear.module + ".residual", ctx.local_tokens, ctx.arch.hidden, reduced, residual.ready)};
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
  std::vector<OpId> column_forward(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear,
                                   const ModuleInput& input) override {
    if (fused_async(ctx.variant) && ctx.variant.boundary_overlap) {
      return async_gather_gemm(b, ctx, linear.gemm_name, column_shape(ctx, linear), input.ready,
                               PieceNorm{linear.norm_name});
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
