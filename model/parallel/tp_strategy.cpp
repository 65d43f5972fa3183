// The strategies whose linears are plain GEMMs: tp (all-reduce after each row-parallel GEMM), dtp (that
// all-reduce delta modules later) and nocomm (no communication); the helpers every strategy shares; and
// the factory of all modes.
#include "model/parallel/tp_strategy.hpp"

#include "base/input_error.hpp"
#include "model/layers/eager_kernels.hpp"
#include "model/parallel/dtp.hpp"
#include "model/parallel/sequence_parallel.hpp"

namespace tpsim::model {
namespace {

// RMSNorm's backward, writing its result (`written`) or leaving it in registers for the kernel's next op.
OpId norm_backward_kernel(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear,
                          std::vector<OpId> grad, const ModuleInput& module_input, bool written) {
  if (module_input.ready) grad.push_back(*module_input.ready);
  const int64_t rows = ctx.local_tokens;
  if (eager_norm(ctx, b.module())) {
    return eager_kernels(b, linear.norm_name + ".backward", eager_norm_backward(stream_bytes(ctx, b)), rows,
                         ctx.arch.hidden, grad);
  }
  const double bytes = static_cast<double>(rows * ctx.arch.hidden) * b.elem_bytes();
  return b.memory(linear.norm_name + ".backward", 2.0 * bytes + static_cast<double>(ctx.arch.hidden) * b.elem_bytes(),
                  written ? bytes : 0.0, 6.0 * static_cast<double>(rows * ctx.arch.hidden),
                  shape_text(rows, ctx.arch.hidden), grad);
}

// tp, dtp and nocomm: the norm, then the GEMM on the rank's (replicated) rows.
ColumnOutput plain_column_forward(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear,
                                  const ModuleInput& input) {
  const OpId normed = norm_of(b, ctx, linear, input);
  return {{b.gemm(linear.gemm_name, column_shape(ctx, linear), {normed})}, {normed}};
}

// tp, dtp and nocomm: the output gradient is whole on every rank; no communication.
std::vector<OpId> plain_row_backward(ProgramBuilder& b, const LayerContext& ctx, const RowLinear& linear,
                                     const ModuleInput& grad, const std::vector<OpId>& saved_input) {
  const GemmShape forward = row_shape(ctx, linear);
  const OpId dgrad = b.gemm(linear.gemm_name + ".dgrad", data_gradient_shape(forward), grad.deps());
  weight_gradient(b, linear.gemm_name, forward, grad.deps(), saved_input);
  return {dgrad};
}

// tp, dtp and nocomm: the input gradient's GEMM and its all-reduce (tp, dtp) while wgrad runs, or (autograd's
// order) after it.
std::vector<OpId> plain_column_input_gradient(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear,
                                              const std::vector<OpId>& grad_out, const std::vector<OpId>& saved_input,
                                              bool all_reduce) {
  const GemmShape forward = column_shape(ctx, linear);
  const bool autograd = ctx.workload.implementation.backward_order == BackwardOrder::kAutograd;
  const OpId dgrad = b.gemm(linear.gemm_name + ".dgrad", data_gradient_shape(forward), grad_out);
  std::vector<OpId> after;  // autograd's order: the weight gradient first
  if (autograd) after.push_back(weight_gradient(b, linear.gemm_name, forward, grad_out, saved_input));
  OpId gradient = dgrad;
  if (all_reduce) {
    const double bytes = static_cast<double>(ctx.tokens * ctx.arch.hidden) * b.elem_bytes();
    gradient = b.collective(linear.gemm_name + ".dgrad.all_reduce", CollectiveKind::kAllReduce, bytes,
                            shape_text(ctx.tokens, ctx.arch.hidden), {dgrad}, after);
  }
  if (!autograd) weight_gradient(b, linear.gemm_name, forward, grad_out, saved_input);
  return {gradient};
}

// tp, dtp and nocomm: the norm and the GEMM on the rank's rows, no gather; backward, the output
// gradient is whole on every rank, and the input gradient all-reduced where the mode communicates.
class PlainLinearStrategy : public TpStrategy {
 public:
  ColumnOutput column_forward(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear,
                              const ModuleInput& input) override {
    return plain_column_forward(b, ctx, linear, input);
  }
  std::vector<OpId> row_backward(ProgramBuilder& b, const LayerContext& ctx, const RowLinear& linear,
                                 const ModuleInput& grad, const std::vector<OpId>& saved_input) override {
    return plain_row_backward(b, ctx, linear, grad, saved_input);
  }
  // Each rank's input gradient is a partial sum over its columns: all-reduced while wgrad runs.
  std::vector<OpId> column_input_gradient(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear,
                                          const std::vector<OpId>& grad_out,
                                          const std::vector<OpId>& saved_input) override {
    return plain_column_input_gradient(b, ctx, linear, grad_out, saved_input, communicates());
  }
};

// tp and dtp: the residual stream is replicated; each row-parallel output is all-reduced, at once
// (tp, dtp with delta 0) or delta modules later (dtp), as DtpState schedules it.
class AllReduceStrategy final : public PlainLinearStrategy {
 public:
  explicit AllReduceStrategy(int modules) : dtp_(modules) {}
  bool shards_sequence(int64_t /*tokens*/, int /*tp*/) const override { return false; }
  void check(const LayerContext& ctx) const override {
    if (ctx.workload.phase == Phase::kTrain && dtp_.active(ctx) && ctx.workload.recompute != Recompute::kNone) {
      throw InputError("variant " + ctx.variant.name +
                       ": tp_mode dtp with delta > 0 under recomputation is not modelled (a recomputed layer would "
                       "need the peers' shares its forward added); use recompute: none");
    }
  }
  // dtp with a delay: the LM head reads the pass's last hidden state, all-reduced after its norm.
  ColumnOutput column_forward(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear,
                              const ModuleInput& input) override {
    if (!linear.closes_pass || !dtp_.active(ctx)) return PlainLinearStrategy::column_forward(b, ctx, linear, input);
    const OpId normed = norm_of(b, ctx, linear, input);
    const OpId reduced = *dtp_.final_reduction(b, ctx, normed);
    return {{b.gemm(linear.gemm_name, column_shape(ctx, linear), {reduced})}, {reduced}};
  }
  ModuleInput enter_module(ProgramBuilder& b, const LayerContext& ctx, const ModuleInput& residual) override {
    return dtp_.before_module(b, ctx, residual);
  }
  ModuleInput row_forward(ProgramBuilder& b, const LayerContext& ctx, const RowLinear& linear,
                          const std::vector<OpId>& inputs, const ModuleInput& residual) override {
    const OpId product = b.gemm(linear.gemm_name, row_shape(ctx, linear), inputs);
    return dtp_.reduce_into_residual(b, ctx, linear.module, linear.gemm_name, product, residual);
  }
  void finish_pass(ProgramBuilder& b, const LayerContext& ctx, OpId normed) override {
    dtp_.final_reduction(b, ctx, normed);
  }
  // dtp with a delay: each row-parallel linear's output gradient adds the peers' stream gradients where
  // they read its partial; the column-parallel input gradients need no all-reduce (each rank's modules
  // read its own stream), except the LM head's (it reads the reduced hidden state every rank shares).
  std::vector<OpId> row_backward(ProgramBuilder& b, const LayerContext& ctx, const RowLinear& linear,
                                 const ModuleInput& grad, const std::vector<OpId>& saved_input) override {
    return plain_row_backward(b, ctx, linear, dtp_.partial_gradient(b, ctx, grad), saved_input);
  }
  std::vector<OpId> column_input_gradient(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear,
                                          const std::vector<OpId>& grad_out,
                                          const std::vector<OpId>& saved_input) override {
    const bool all_reduce = !dtp_.active(ctx) || linear.closes_pass;
    return plain_column_input_gradient(b, ctx, linear, grad_out, saved_input, all_reduce);
  }
  void after_module_backward(ProgramBuilder& b, const LayerContext& ctx, const ModuleInput& grad) override {
    dtp_.after_module_backward(b, ctx, grad);
  }

 private:
  DtpState dtp_;
};

// nocomm: every rank computes its shard and nothing is exchanged (the lower bound of any TP mode);
// norms and residuals run on tokens / tp whenever the tokens divide.
class NoCommStrategy final : public PlainLinearStrategy {
 public:
  bool communicates() const override { return false; }
  bool shards_sequence(int64_t tokens, int tp) const override { return tokens % tp == 0; }
  ModuleInput row_forward(ProgramBuilder& b, const LayerContext& ctx, const RowLinear& linear,
                          const std::vector<OpId>& inputs, const ModuleInput& residual) override {
    const OpId product = b.gemm(linear.gemm_name, row_shape(ctx, linear), inputs);
    return residual_stream(b, ctx, linear.module + ".residual", {product}, residual.ready);
  }
};

}  // namespace

void TpStrategy::check(const LayerContext& /*ctx*/) const {}

ModuleInput TpStrategy::enter_module(ProgramBuilder& /*b*/, const LayerContext& /*ctx*/, const ModuleInput& residual) {
  return residual;
}

void TpStrategy::finish_pass(ProgramBuilder& /*b*/, const LayerContext& /*ctx*/, OpId /*normed*/) {}

void TpStrategy::after_module_backward(ProgramBuilder& /*b*/, const LayerContext& /*ctx*/,
                                       const ModuleInput& /*grad*/) {}

ModuleInput TpStrategy::reduce_partial(ProgramBuilder& b, const LayerContext& ctx, const std::string& name,
                                       OpId partial) {
  if (!communicates()) return ModuleInput{partial};
  const double bytes = static_cast<double>(ctx.tokens * ctx.arch.hidden) * b.elem_bytes();
  const CollectiveKind kind = ctx.sequence_sharded ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
  const std::string suffix = ctx.sequence_sharded ? ".reduce_scatter" : ".all_reduce";
  const std::string shape = shape_text(ctx.tokens, ctx.arch.hidden);
  // Scattered on the sequence dimension of [batch, seq, hidden]: the whole partial is copied into the
  // collective's layout first, as after a linear (pytorch/torchtitan#437).
  if (ctx.sequence_sharded && ctx.layout_copies()) {
    partial = b.memory(name + ".reduce_scatter.layout_copy", bytes, bytes, 0, shape, {partial});
  }
  return ModuleInput{b.collective(name + suffix, kind, bytes, shape, {partial})};
}

OpId TpStrategy::gather_gradient(ProgramBuilder& b, const LayerContext& ctx, const std::string& name,
                                 const ModuleInput& grad) {
  if (!communicates() || !ctx.sequence_sharded) return *grad.ready;
  const double bytes = static_cast<double>(ctx.tokens * ctx.arch.hidden) * b.elem_bytes();
  const std::string shape = shape_text(ctx.tokens, ctx.arch.hidden);
  const OpId gathered = b.collective(name + ".all_gather", CollectiveKind::kAllGather, bytes, shape, grad.deps());
  if (!ctx.layout_copies()) return gathered;
  return b.memory(name + ".all_gather.layout_copy", bytes, bytes, 0, shape, {gathered});
}

OpId TpStrategy::column_backward(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear,
                                 const std::vector<OpId>& grad_out, const std::vector<OpId>& saved_input,
                                 const ModuleInput& module_input) {
  return norm_backward_kernel(b, ctx, linear, column_input_gradient(b, ctx, linear, grad_out, saved_input),
                              module_input, true);
}

OpId norm_of(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear, const ModuleInput& input) {
  if (linear.normed) return *linear.normed;
  return stream_norm(b, ctx, linear.norm_name, input);
}

GemmShape column_shape(const LayerContext& ctx, const ColumnLinear& linear) {
  return GemmShape{ctx.tokens, linear.out_cols, ctx.arch.hidden};
}

GemmShape row_shape(const LayerContext& ctx, const RowLinear& linear) {
  return GemmShape{ctx.tokens, ctx.arch.hidden, linear.in_cols};
}

GemmShape data_gradient_shape(GemmShape forward) {
  return GemmShape{forward.m, forward.k, forward.n, forward.groups, false};
}

GemmShape weight_gradient_shape(GemmShape forward) {
  // A grouped forward's weight gradients: one [k, n] output per problem, each over its own rows.
  return GemmShape{forward.k, forward.n, forward.m, forward.groups, forward.groups > 1};
}

OpId weight_gradient(ProgramBuilder& b, const std::string& gemm_name, GemmShape forward,
                     const std::vector<OpId>& grad_out, const std::vector<OpId>& saved_input) {
  std::vector<OpId> deps = grad_out;
  deps.insert(deps.end(), saved_input.begin(), saved_input.end());
  return b.gemm(gemm_name + ".wgrad", weight_gradient_shape(forward), deps);
}

ModuleInput module_input_gradient(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear,
                                  std::vector<OpId> grad, const ModuleInput& module_input, const std::string& module,
                                  const ModuleInput& skip) {
  const std::string name = module + ".residual.backward";
  const int64_t rows = ctx.local_tokens, width = ctx.arch.hidden;
  if (ctx.workload.implementation.add_norm == AddNormKernel::kSeparate || eager_norm(ctx, b.module())) {
    const OpId dx = norm_backward_kernel(b, ctx, linear, std::move(grad), module_input, true);
    return ModuleInput{residual_add(b, name, rows, width, {dx}, skip.ready)};
  }
  const OpId dx = norm_backward_kernel(b, ctx, linear, std::move(grad), module_input, false);
  const double bytes = static_cast<double>(rows * width) * b.elem_bytes();
  return ModuleInput{b.continue_kernel(dx, name, bytes, bytes, bytes, static_cast<double>(rows * width),
                                       shape_text(rows, width), skip.deps())};
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
