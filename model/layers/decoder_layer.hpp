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
// A parallel-residual layer's attention_forward returns its o_proj's unreduced partial sums, which the FFN's
// down projection takes as `accumulated` (added into its GEMM's output before the reduction).
ModuleInput ffn_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const ModuleInput& input,
                        SavedModule* saved, const std::vector<OpId>& accumulated = {});

// One decoder layer's forward from the stream `hidden`, its modules numbered 2 layer and 2 layer + 1 on the
// builder, each entered through the strategy where `enter` (a recomputation reads the saved input as it is):
// attention, then the FFN over its output; or, where the model runs them in parallel (style.parallel_residual:
// GPT-NeoX, Falcon, Phi), both over the layer input, their row-parallel outputs summed and reduced once.
ModuleInput layer_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, int64_t layer,
                          const ModuleInput& hidden, SavedModule* attn, SavedModule* ffn, bool enter = true);
// Its backward from the gradient of the layer's output: the FFN's, then the attention's (of a parallel layer:
// from the same output gradient, its input gradient added to the FFN's), each followed by the strategy's
// after_module_backward.
ModuleInput layer_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, int64_t layer,
                           const SavedModule& attn, const SavedModule& ffn, const ModuleInput& grad);
// Refuses (InputError, one line naming what is valid) a parallel-residual model under what it is not modelled
// with: MoE, linear or latent attention layers, dtp with a delay, two-batch or combined-1F1B overlap.
void check_parallel_residual(const LayerContext& ctx);

// Backward of each module: `grad` is the gradient of the residual stream after the module (rows as the
// stream holds them); returns the gradient of the stream before it.
// `skip` (default: `grad`) is the stream gradient past the module that its input gradient adds to.
ModuleInput attention_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const SavedModule& saved,
                               const ModuleInput& grad, const ModuleInput* skip = nullptr);
ModuleInput ffn_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const SavedModule& saved,
                         const ModuleInput& grad);

}  // namespace tpsim::model
