// Delayed TP (DTP): each module adds its own partial output to the residual at once and reduces the
// partials asynchronously; the other ranks' partials are added delta modules later. The first
// delta+1 modules see only their own partials, the last delta modules send nothing (nothing would
// consume them), and one all-reduce of the final normed hidden state closes the pass.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/layer_ops.hpp"

namespace tpsim::model {

class DtpState {
 public:
  explicit DtpState(int modules) : modules_(modules), reductions_(modules) {}

  // Before module k (called in module order): adds the peers' partials of module k-1-delta.
  ModuleInput before_module(ProgramBuilder& b, const LayerContext& ctx, const ModuleInput& residual);
  // After module k's row-parallel GEMM `product`: own add, and the reduction if a later module uses it.
  ModuleInput after_module(ProgramBuilder& b, const LayerContext& ctx, const std::string& module, OpId product,
                           const ModuleInput& residual);
  void final_reduction(ProgramBuilder& b, const LayerContext& ctx, OpId normed);

 private:
  bool active(const LayerContext& ctx) const { return ctx.variant.mode == TpMode::kDtp && ctx.variant.delta > 0; }

  int modules_;
  int next_ = 0;  // the module before_module() was last called for
  std::vector<std::optional<OpId>> reductions_;
};

}  // namespace tpsim::model
