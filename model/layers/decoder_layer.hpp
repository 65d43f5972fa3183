// One decoder layer's two modules, forward and backward: attention (norm, QKV, QK-norm, RoPE,
// attention, O-proj, residual) and FFN (norm, gate/up, SwiGLU, down, residual; an MoE model's is
// moe_layer.hpp's). The variant's TP strategy issues the linears and the communication around them.
#pragma once

#include <vector>

#include "model/parallel/tp_strategy.hpp"

namespace tpsim::model {

// What an MoE module's shared expert's backward reads: its gathered input, its gate/up output, and its SwiGLU
// output and gate.
struct SavedShared {
  std::vector<OpId> column_input;
  std::vector<OpId> column_output;
  std::vector<OpId> inner;  // the SwiGLU output, then the gate
};

// What a module's backward reads of its forward: the ops whose outputs autograd saves.
struct SavedModule {
  ModuleInput input;                // the residual stream the module read (the norm's input)
  std::vector<OpId> column_input;   // the column-parallel GEMM's input: normed, gathered where the mode gathers
  std::vector<OpId> column_output;  // QKV or gate/up
  std::vector<OpId> inner;          // attention: the rotated Q, K and the attention output; ffn: none
  std::vector<OpId> row_input;      // the row-parallel GEMM's input: the attention or SwiGLU output
  SavedShared shared;               // an MoE FFN's shared expert (empty without one)
};

// The implementation's separate projections (q, k, v; gate, up) as parts of their fused linears.
void set_projection_parts(ProgramBuilder& b, const LayerContext& ctx);

// Forward of each module; `saved` (may be null) receives what its backward reads.
ModuleInput attention_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const ModuleInput& input,
                              SavedModule* saved);
ModuleInput ffn_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const ModuleInput& input,
                        SavedModule* saved);

// Backward of each module: `grad` is the gradient of the residual stream after the module (rows as the
// stream holds them); returns the gradient of the stream before it.
ModuleInput attention_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const SavedModule& saved,
                               const ModuleInput& grad);
ModuleInput ffn_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const SavedModule& saved,
                         const ModuleInput& grad);

}  // namespace tpsim::model
