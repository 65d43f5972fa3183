// Delayed TP (DTP): each module adds its own partial output to the residual at once and reduces the
// partials asynchronously; module m + 1 + delta adds the other ranks' partials of module m. The first
// delta+1 modules see only their own partials, the last delta+1 modules send nothing (nothing would
// consume them), and one all-reduce of the final normed hidden state closes the pass. The schedule is
// model/dtp_schedule.hpp's; this file issues its ops, for a scenario's layers and for the bare chain of
// GEMM modules that tpsim-real dtp measures.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/dtp_schedule.hpp"
#include "model/layer_ops.hpp"

namespace tpsim::model {

class DtpState {
 public:
  explicit DtpState(int modules) : modules_(modules), reductions_(modules) {}

  // Before module k (called in module order): adds the peers' partials of module k-1-delta.
  ModuleInput before_module(ProgramBuilder& b, const LayerContext& ctx, const ModuleInput& residual);
  // Module k's row-parallel GEMM output `product` (named gemm_name) into the residual stream: under tp
  // (and dtp with delta 0) its all-reduce, then the residual add; under dtp, after_module.
  ModuleInput reduce_into_residual(ProgramBuilder& b, const LayerContext& ctx, const std::string& module,
                                   const std::string& gemm_name, OpId product, const ModuleInput& residual);
  // The pass's last reduction (dtp with delta > 0 only): an all-reduce of `normed`.
  void final_reduction(ProgramBuilder& b, const LayerContext& ctx, OpId normed);

 private:
  // After module k's row-parallel GEMM `product`: own add, and the reduction if a later module uses it.
  ModuleInput after_module(ProgramBuilder& b, const LayerContext& ctx, const std::string& module, OpId product,
                           const ModuleInput& residual);
  bool active(const LayerContext& ctx) const { return ctx.variant.mode == TpMode::kDtp && ctx.variant.delta > 0; }
  DtpSchedule schedule(const LayerContext& ctx) const { return {modules_, active(ctx) ? ctx.variant.delta : 0}; }

  int modules_;
  int next_ = 0;  // the module before_module() was last called for
  std::vector<std::optional<OpId>> reductions_;
};

// The chain tpsim-real dtp measures: `modules` row-parallel GEMMs of shape `gemm` (ctx.tokens rows,
// ctx.arch.hidden columns: the residual stream's width), each reading the residual stream and reduced
// into it as ctx.variant says (tp, or dtp with its delta), with the final reduction of a dtp pass;
// a scenario's layers less their other kernels.
void build_module_chain(ProgramBuilder& b, const LayerContext& ctx, GemmShape gemm, int modules);

}  // namespace tpsim::model
