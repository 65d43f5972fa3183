// DTP ops: own-partial adds, asynchronous all-reduce or all-gather of partials, late peer adds.
#include "model/parallel/dtp.hpp"

namespace tpsim::model {

OpId DtpState::reduce(ProgramBuilder& b, const LayerContext& ctx, const std::string& name, OpId tensor) const {
  const int64_t hidden = ctx.arch.hidden;
  const double bytes = static_cast<double>(ctx.tokens * hidden) * b.elem_bytes();
  return ctx.variant.dtp_allgather ? b.collective(name + ".all_gather", CollectiveKind::kAllGather, b.tp() * bytes,
                                                  shape_text(b.tp() * ctx.tokens, hidden), {tensor})
                                   : b.collective(name + ".all_reduce", CollectiveKind::kAllReduce, bytes,
                                                  shape_text(ctx.tokens, hidden), {tensor});
}

OpId DtpState::add_peers(ProgramBuilder& b, const LayerContext& ctx, const std::string& name, OpId reduced,
                         const ModuleInput& residual) const {
  const double tensor = static_cast<double>(ctx.tokens * ctx.arch.hidden) * b.elem_bytes();
  // all-reduce: residual + (sum - own share); all-gather: residual + the tp-1 peer shares.
  const double read = ctx.variant.dtp_allgather ? (b.tp() - 1) * tensor + tensor : 3.0 * tensor;
  std::vector<OpId> deps{reduced};
  if (residual.ready) deps.push_back(*residual.ready);
  return b.memory(name, read, tensor, read / b.elem_bytes(), shape_text(ctx.tokens, ctx.arch.hidden), deps);
}

ModuleInput DtpState::before_module(ProgramBuilder& b, const LayerContext& ctx, const ModuleInput& residual) {
  if (!active(ctx)) return residual;
  const int source = schedule(ctx).peer_share_before(b.module());
  if (source < 0 || !reductions_[source]) return residual;
  return ModuleInput{
      add_peers(b, ctx, "dtp.add_peers_of_module" + std::to_string(source), *reductions_[source], residual)};
}

ModuleInput DtpState::partial_gradient(ProgramBuilder& b, const LayerContext& ctx, const ModuleInput& grad) {
  const int k = b.module();
  if (!active(ctx) || !schedule(ctx).reduces(k)) return grad;
  const int reader = k + 1 + ctx.variant.delta;  // the module before which the peers added module k's partial
  if (!gradient_reductions_[reader]) return grad;
  return ModuleInput{add_peers(b, ctx, "dtp.backward.add_peer_gradients_of_module" + std::to_string(reader),
                               *gradient_reductions_[reader], grad)};
}

void DtpState::after_module_backward(ProgramBuilder& b, const LayerContext& ctx, const ModuleInput& grad) {
  const int k = b.module();
  if (!active(ctx) || schedule(ctx).peer_share_before(k) < 0 || !grad.ready) return;
  gradient_reductions_[k] = reduce(b, ctx, "dtp.backward.input_gradient", *grad.ready);
}

ModuleInput DtpState::reduce_into_residual(ProgramBuilder& b, const LayerContext& ctx, const std::string& module,
                                           const std::string& gemm_name, OpId product, const ModuleInput& residual) {
  if (active(ctx)) return after_module(b, ctx, module, product, residual);
  const int64_t hidden = ctx.arch.hidden;
  const double bytes = static_cast<double>(ctx.tokens * hidden) * b.elem_bytes();
  const OpId reduced = b.collective(gemm_name + ".all_reduce", CollectiveKind::kAllReduce, bytes,
                                    shape_text(ctx.tokens, hidden), {product});
  return residual_stream(b, ctx, module + ".residual", {reduced}, residual.ready);
}

ModuleInput DtpState::after_module(ProgramBuilder& b, const LayerContext& ctx, const std::string& module, OpId product,
                                   const ModuleInput& residual) {
  const int k = b.module();
  const OpId own = residual_add(b, module + ".residual_own", ctx.tokens, ctx.arch.hidden, {product}, residual.ready);
  if (schedule(ctx).reduces(k)) reductions_[k] = reduce(b, ctx, module + ".partials", product);
  return ModuleInput{own, true};
}

std::optional<OpId> DtpState::final_reduction(ProgramBuilder& b, const LayerContext& ctx, OpId normed) {
  if (!schedule(ctx).final_reduction()) return std::nullopt;
  const double tensor = static_cast<double>(ctx.tokens * ctx.arch.hidden) * b.elem_bytes();
  return b.collective("final.all_reduce", CollectiveKind::kAllReduce, tensor, shape_text(ctx.tokens, ctx.arch.hidden),
                      {normed});
}

void build_module_chain(ProgramBuilder& b, const LayerContext& ctx, GemmShape gemm, int modules) {
  DtpState dtp(modules);
  ModuleInput residual;
  for (int m = 0; m < modules; ++m) {
    b.set_layer(m);
    b.set_module(m);
    residual = dtp.before_module(b, ctx, residual);
    const OpId product = b.gemm("module.gemm", gemm, residual.deps());
    residual = dtp.reduce_into_residual(b, ctx, "module", "module.gemm", product, residual);
  }
  b.set_module(-1);
  if (residual.ready) dtp.final_reduction(b, ctx, *residual.ready);
}

}  // namespace tpsim::model
