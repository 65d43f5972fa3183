// Delayed TP (DTP): each module adds its own partial output to the residual at once and reduces the
// partials asynchronously; module m + 1 + delta adds the other ranks' partials of module m. The first
// delta+1 modules see only their own partials, the last delta+1 modules send nothing (nothing would
// consume them), and one all-reduce of the final normed hidden state closes the pass. The schedule is
// model/parallel/dtp_schedule.hpp's; this file issues its ops, for a scenario's layers and for the bare chain of
// GEMM modules that tpsim-real dtp measures. A training step's backward mirrors it (see partial_gradient).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/layers/layer_ops.hpp"
#include "model/parallel/dtp_schedule.hpp"

namespace tpsim::model {

class DtpState {
 public:
  explicit DtpState(int modules) : modules_(modules), reductions_(modules), gradient_reductions_(modules) {}

  // Whether the variant delays its reductions (dtp with delta > 0).
  bool active(const LayerContext& ctx) const { return ctx.variant.mode == TpMode::kDtp && ctx.variant.delta > 0; }

  // Before module k (the builder's module; called in module order): adds the peers' partials of module
  // k-1-delta.
  ModuleInput before_module(ProgramBuilder& b, const LayerContext& ctx, const ModuleInput& residual);
  // Module k's row-parallel GEMM output `product` (named gemm_name) into the residual stream: under tp
  // (and dtp with delta 0) its all-reduce, then the residual add; under dtp, after_module.
  ModuleInput reduce_into_residual(ProgramBuilder& b, const LayerContext& ctx, const std::string& module,
                                   const std::string& gemm_name, OpId product, const ModuleInput& residual);
  // The pass's last reduction (dtp with delta > 0 only): an all-reduce of `normed`, returned.
  std::optional<OpId> final_reduction(ProgramBuilder& b, const LayerContext& ctx, OpId normed);

  // Backward, module k's partial output: its gradient is the rank's own stream gradient `grad` plus, when
  // module k+1+delta added the partial to the peers' streams, the peers' gradients there (reduced after
  // that module's backward, delta modules before this one runs). Returns the gradient the row-parallel
  // linear's backward reads.
  ModuleInput partial_gradient(ProgramBuilder& b, const LayerContext& ctx, const ModuleInput& grad);
  // Backward, after module k: `grad` is the gradient of the stream module k read; reduced across ranks
  // when the peers' share of module k-1-delta was added to that stream (that module's backward reads it).
  void after_module_backward(ProgramBuilder& b, const LayerContext& ctx, const ModuleInput& grad);

 private:
  // After module k's row-parallel GEMM `product`: own add, and the reduction if a later module uses it.
  ModuleInput after_module(ProgramBuilder& b, const LayerContext& ctx, const std::string& module, OpId product,
                           const ModuleInput& residual);
  // The reduction of a [tokens, hidden] tensor as the variant runs it: all-reduce, or all-gather.
  OpId reduce(ProgramBuilder& b, const LayerContext& ctx, const std::string& name, OpId tensor) const;
  // residual + (the reduced tensor - own share), reading as the variant's reduction left it.
  OpId add_peers(ProgramBuilder& b, const LayerContext& ctx, const std::string& name, OpId reduced,
                 const ModuleInput& residual) const;
  DtpSchedule schedule(const LayerContext& ctx) const { return {modules_, active(ctx) ? ctx.variant.delta : 0}; }

  int modules_;
  std::vector<std::optional<OpId>> reductions_;           // forward: module k's partials
  std::vector<std::optional<OpId>> gradient_reductions_;  // backward: the gradient of module k's input
};

// The chain tpsim-real dtp measures: `modules` row-parallel GEMMs of shape `gemm` (ctx.tokens rows,
// ctx.arch.hidden columns: the residual stream's width), each reading the residual stream and reduced
// into it as ctx.variant says (tp, or dtp with its delta), with the final reduction of a dtp pass;
// a scenario's layers less their other kernels.
void build_module_chain(ProgramBuilder& b, const LayerContext& ctx, GemmShape gemm, int modules);

}  // namespace tpsim::model
