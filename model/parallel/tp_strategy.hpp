// How a TP mode moves activations around a layer's linears: one strategy object per mode (tp, sp,
// async with its options, dtp, nocomm) that the layer builders call, so they never test the mode.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/layers/layer_ops.hpp"

namespace tpsim::model {

// A column-parallel linear and its input RMSNorm: the norm of the residual stream, then a GEMM of
// out_cols local columns over the full hidden width.
struct ColumnLinear {
  std::string norm_name;  // e.g. "attn.norm"
  std::string gemm_name;  // e.g. "attn.qkv_proj"
  int64_t out_cols = 0;
  bool closes_pass = false;  // the LM head: reads the pass's last hidden state, which dtp reduces first
  // The norm's output when another branch of the module has run it (an MoE's shared expert beside the
  // router): the linear reads it instead of running the norm again.
  std::optional<OpId> normed = std::nullopt;
};

// A row-parallel linear closing a module: a GEMM of in_cols local rows to the hidden width, the
// reduction of its partial sums across ranks, and the residual add.
struct RowLinear {
  std::string module;     // "attn" or "ffn": names the residual add
  std::string gemm_name;  // e.g. "attn.o_proj"
  int64_t in_cols = 0;
};

// A column-parallel linear's forward: the ops producing its [tokens, out_cols] output, and those
// producing the GEMM's input (what its weight gradient reads).
struct ColumnOutput {
  std::vector<OpId> output;
  std::vector<OpId> gemm_input;
};

class TpStrategy {
 public:
  virtual ~TpStrategy() = default;

  // Whether the mode communicates at all (nocomm does not, not even the optimizer's norm all-reduce).
  virtual bool communicates() const { return true; }
  // Whether the residual stream between modules holds tokens / tp rows on each rank.
  virtual bool shards_sequence(int64_t tokens, int tp) const = 0;
  // Refuses (InputError) a pass the mode cannot split.
  virtual void check(const LayerContext& ctx) const;

  // Called before each module, in order: the stream the module reads (dtp adds late partials here).
  virtual ModuleInput enter_module(ProgramBuilder& b, const LayerContext& ctx, const ModuleInput& residual);
  // The column-parallel linear over the module input.
  virtual ColumnOutput column_forward(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear,
                                      const ModuleInput& input) = 0;
  // The row-parallel linear over `inputs` ([tokens, in_cols]), reduced into the residual stream.
  virtual ModuleInput row_forward(ProgramBuilder& b, const LayerContext& ctx, const RowLinear& linear,
                                  const std::vector<OpId>& inputs, const ModuleInput& residual) = 0;
  // After the pass's final norm `normed` (dtp's closing all-reduce).
  virtual void finish_pass(ProgramBuilder& b, const LayerContext& ctx, OpId normed);
  // After each module's backward (the builder's module), `grad` the gradient of the stream it read.
  virtual void after_module_backward(ProgramBuilder& b, const LayerContext& ctx, const ModuleInput& grad);

  // A [tokens, hidden] partial sum every rank holds (the vocab-parallel embedding's lookup) reduced
  // into the residual stream's rows: all-reduce, reduce-scatter, or nothing (nocomm). With the
  // implementation's sp_layout_copies, a reduce-scatter is preceded and its backward's all-gather followed by
  // a full-tensor layout copy.
  virtual ModuleInput reduce_partial(ProgramBuilder& b, const LayerContext& ctx, const std::string& name, OpId partial);
  // Backward of reduce_partial: the stream's gradient made whole on every rank (the all-gather of sp).
  virtual OpId gather_gradient(ProgramBuilder& b, const LayerContext& ctx, const std::string& name,
                               const ModuleInput& grad);

  // Backward of row_forward: `grad` is the residual stream's gradient (rows as the stream holds them);
  // gathers it where the forward scattered, runs the data-gradient GEMM (returned: the gradient of the
  // [tokens, in_cols] input) and the weight-gradient GEMM, which reads `saved_input`.
  virtual std::vector<OpId> row_backward(ProgramBuilder& b, const LayerContext& ctx, const RowLinear& linear,
                                         const ModuleInput& grad, const std::vector<OpId>& saved_input) = 0;
  // Backward of column_forward: the data-gradient GEMM of `grad_out`, its partial sums reduced to the
  // stream's rows (all-reduce, reduce-scatter or its pipeline) while the weight-gradient GEMM runs, then
  // the norm's backward over `module_input`. Returns the gradient of the module input through this branch.
  OpId column_backward(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear,
                       const std::vector<OpId>& grad_out, const std::vector<OpId>& saved_input,
                       const ModuleInput& module_input);
  // column_backward without the norm's backward: the ops whose outputs sum to the gradient of the norm's
  // output through this linear (a module whose branches share one norm sums them before its backward).
  virtual std::vector<OpId> column_input_gradient(ProgramBuilder& b, const LayerContext& ctx,
                                                  const ColumnLinear& linear, const std::vector<OpId>& grad_out,
                                                  const std::vector<OpId>& saved_input) = 0;
};

// The strategy of `variant` for one pass over `modules` modules (two per decoder layer).
std::unique_ptr<TpStrategy> make_tp_strategy(const Variant& variant, int modules);

// Shared by the strategies: the input RMSNorm over the rank's rows of the residual stream.
OpId norm_of(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear, const ModuleInput& input);
// Shared by the strategies: the full GEMM shape of a linear over all tokens of the pass.
GemmShape column_shape(const LayerContext& ctx, const ColumnLinear& linear);
GemmShape row_shape(const LayerContext& ctx, const RowLinear& linear);
// The backward GEMMs of a forward GEMM [m, k] x [k, n]: the data gradient [m, n] x [n, k] and the
// weight gradient [k, m] x [m, n], each with the forward's FLOPs (a grouped forward's: grouped alike, the
// weight gradient's problems splitting k).
GemmShape data_gradient_shape(GemmShape forward);
GemmShape weight_gradient_shape(GemmShape forward);
// The weight-gradient GEMM of `forward` named <gemm>.wgrad, reading the output gradient and the saved input.
OpId weight_gradient(ProgramBuilder& b, const std::string& gemm_name, GemmShape forward,
                     const std::vector<OpId>& grad_out, const std::vector<OpId>& saved_input);
// The gradient of a module's input: RMSNorm's backward over `module_input` (reads the norm's input and `grad`,
// the parts of its output's gradient; writes its input's), plus `skip`, the stream's gradient past the module
// (the skip connection), summed by <module>.residual.backward. Two kernels, or where the implementation fuses add
// and norm (add_norm other than separate) one: the add continues the norm's backward, whose result never leaves
// registers.
ModuleInput module_input_gradient(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear,
                                  std::vector<OpId> grad, const ModuleInput& module_input, const std::string& module,
                                  const ModuleInput& skip);

}  // namespace tpsim::model
