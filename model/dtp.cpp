// DTP ops: own-partial adds, asynchronous all-reduce or all-gather of partials, late peer adds.
#include "model/dtp.hpp"

namespace tpsim::model {

ModuleInput DtpState::before_module(ProgramBuilder& b, const LayerContext& ctx, const ModuleInput& residual) {
  const int k = next_;
  if (!active(ctx)) {
    ++next_;
    return residual;
  }
  const int source = schedule(ctx).peer_share_before(k);
  if (source < 0 || !reductions_[source]) return residual;
  const int tp = b.tp();
  const double tensor = static_cast<double>(ctx.tokens * ctx.arch.hidden) * b.elem_bytes();
  // all-reduce: residual + (sum - own partial); all-gather: residual + the tp-1 peer partials.
  const double read = ctx.variant.dtp_allgather ? (tp - 1) * tensor + tensor : 3.0 * tensor;
  std::vector<OpId> deps{*reductions_[source]};
  if (residual.ready) deps.push_back(*residual.ready);
  const OpId add = b.memory("dtp.add_peers_of_module" + std::to_string(source), read, tensor, read / b.elem_bytes(),
                            shape_text(ctx.tokens, ctx.arch.hidden), deps);
  return ModuleInput{add};
}

ModuleInput DtpState::reduce_into_residual(ProgramBuilder& b, const LayerContext& ctx, const std::string& module,
                                           const std::string& gemm_name, OpId product, const ModuleInput& residual) {
  if (active(ctx)) return after_module(b, ctx, module, product, residual);
  const int64_t hidden = ctx.arch.hidden;
  const double bytes = static_cast<double>(ctx.tokens * hidden) * b.elem_bytes();
  const OpId reduced = b.collective(gemm_name + ".all_reduce", CollectiveKind::kAllReduce, bytes,
                                    shape_text(ctx.tokens, hidden), {product});
  return ModuleInput{residual_add(b, module + ".residual", ctx.local_tokens, hidden, {reduced}, residual.ready)};
}

ModuleInput DtpState::after_module(ProgramBuilder& b, const LayerContext& ctx, const std::string& module, OpId product,
                                   const ModuleInput& residual) {
  const int k = next_++;
  const int64_t hidden = ctx.arch.hidden;
  const OpId own = residual_add(b, module + ".residual_own", ctx.tokens, hidden, {product}, residual.ready);
  if (schedule(ctx).reduces(k)) {
    const double tensor = static_cast<double>(ctx.tokens * hidden) * b.elem_bytes();
    const std::string shape = shape_text(ctx.tokens, hidden);
    reductions_[k] =
        ctx.variant.dtp_allgather
            ? b.collective(module + ".partials.all_gather", CollectiveKind::kAllGather, b.tp() * tensor,
                           shape_text(b.tp() * ctx.tokens, hidden), {product})
            : b.collective(module + ".partials.all_reduce", CollectiveKind::kAllReduce, tensor, shape, {product});
  }
  return ModuleInput{own};
}

void DtpState::final_reduction(ProgramBuilder& b, const LayerContext& ctx, OpId normed) {
  if (!schedule(ctx).final_reduction()) return;
  const double tensor = static_cast<double>(ctx.tokens * ctx.arch.hidden) * b.elem_bytes();
  b.collective("final.all_reduce", CollectiveKind::kAllReduce, tensor, shape_text(ctx.tokens, ctx.arch.hidden),
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
