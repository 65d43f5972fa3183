// The strategies whose linears are plain GEMMs: tp (all-reduce after each row-parallel GEMM), dtp (that
// all-reduce delta modules later) and nocomm (no communication); and the factory of all modes.
#include "model/tp_strategy.hpp"

#include "model/dtp.hpp"
#include "model/sequence_parallel.hpp"

namespace tpsim::model {
namespace {

// tp and dtp: the residual stream is replicated; each row-parallel output is all-reduced, at once
// (tp, dtp with delta 0) or delta modules later (dtp), as DtpState schedules it.
class AllReduceStrategy final : public TpStrategy {
 public:
  explicit AllReduceStrategy(int modules) : dtp_(modules) {}
  bool shards_sequence(int64_t /*tokens*/, int /*tp*/) const override { return false; }
  ModuleInput enter_module(ProgramBuilder& b, const LayerContext& ctx, const ModuleInput& residual) override {
    return dtp_.before_module(b, ctx, residual);
  }
  std::vector<OpId> column_forward(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear,
                                   const ModuleInput& input) override {
    return {b.gemm(linear.gemm_name, column_shape(ctx, linear), {norm_of(b, ctx, linear, input)})};
  }
  ModuleInput row_forward(ProgramBuilder& b, const LayerContext& ctx, const RowLinear& linear,
                          const std::vector<OpId>& inputs, const ModuleInput& residual) override {
    const OpId product = b.gemm(linear.gemm_name, row_shape(ctx, linear), inputs);
    return dtp_.reduce_into_residual(b, ctx, linear.module, linear.gemm_name, product, residual);
  }
  void finish_pass(ProgramBuilder& b, const LayerContext& ctx, OpId normed) override {
    dtp_.final_reduction(b, ctx, normed);
  }

 private:
  DtpState dtp_;
};

// nocomm: every rank computes its shard and nothing is exchanged (the lower bound of any TP mode);
// norms and residuals run on tokens / tp whenever the tokens divide.
class NoCommStrategy final : public TpStrategy {
 public:
  bool shards_sequence(int64_t tokens, int tp) const override { return tokens % tp == 0; }
  std::vector<OpId> column_forward(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear,
                                   const ModuleInput& input) override {
    return {b.gemm(linear.gemm_name, column_shape(ctx, linear), {norm_of(b, ctx, linear, input)})};
  }
  ModuleInput row_forward(ProgramBuilder& b, const LayerContext& ctx, const RowLinear& linear,
                          const std::vector<OpId>& inputs, const ModuleInput& residual) override {
    const OpId product = b.gemm(linear.gemm_name, row_shape(ctx, linear), inputs);
    return ModuleInput{
        residual_add(b, linear.module + ".residual", ctx.local_tokens, ctx.arch.hidden, {product}, residual.ready)};
  }
};

}  // namespace

void TpStrategy::check(const LayerContext& /*ctx*/) const {}

ModuleInput TpStrategy::enter_module(ProgramBuilder& /*b*/, const LayerContext& /*ctx*/,
                                     const ModuleInput& residual) {
  return residual;
}

void TpStrategy::finish_pass(ProgramBuilder& /*b*/, const LayerContext& /*ctx*/, OpId /*normed*/) {}

OpId norm_of(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear, const ModuleInput& input) {
  return rms_norm(b, linear.norm_name, ctx.local_tokens, ctx.arch.hidden, input.deps());
}

GemmShape column_shape(const LayerContext& ctx, const ColumnLinear& linear) {
  return GemmShape{ctx.tokens, linear.out_cols, ctx.arch.hidden};
}

GemmShape row_shape(const LayerContext& ctx, const RowLinear& linear) {
  return GemmShape{ctx.tokens, ctx.arch.hidden, linear.in_cols};
}

std::unique_ptr<TpStrategy> make_tp_strategy(const Variant& variant, int modules) {
  switch (variant.mode) {
    case TpMode::kTp:
    case TpMode::kDtp:
      return std::make_unique<AllReduceStrategy>(modules);
    case TpMode::kNoComm:
      return std::make_unique<NoCommStrategy>();
    case TpMode::kSp:
    case TpMode::kAsync:
      return make_sequence_parallel_strategy(variant);
  }
  return std::make_unique<NoCommStrategy>();
}

}  // namespace tpsim::model
