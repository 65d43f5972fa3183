// DTP ops: own-partial adds, asynchronous all-reduce or all-gather of partials, late peer adds.
#include "model/dtp.hpp"

namespace tpsim::model {

ModuleInput DtpState::before_module(ProgramBuilder& b, const LayerContext& ctx, const ModuleInput& residual) {
  const int k = next_;
  if (!active(ctx)) {
    ++next_;
    return residual;
  }
  const int source = k - 1 - ctx.variant.delta;
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

ModuleInput DtpState::after_module(ProgramBuilder& b, const LayerContext& ctx, const std::string& module, OpId product,
                                   const ModuleInput& residual) {
  const int k = next_++;
  const int64_t hidden = ctx.arch.hidden;
  const OpId own = residual_add(b, module + ".residual_own", ctx.tokens, hidden, {product}, residual.ready);
  if (k + 1 + ctx.variant.delta < modules_) {
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
  const double tensor = static_cast<double>(ctx.tokens * ctx.arch.hidden) * b.elem_bytes();
  b.collective("final.all_reduce", CollectiveKind::kAllReduce, tensor, shape_text(ctx.tokens, ctx.arch.hidden),
               {normed});
}

}  // namespace tpsim::model
