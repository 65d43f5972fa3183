// Kernels shared by every variant's layer: RMSNorm, residual add, FlashAttention core (prefill and
// decode over a KV cache), and the residual stream handle passed between modules.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/graph/layer_context.hpp"
#include "model/graph/program_builder.hpp"
#include "model/layers/attention_dims.hpp"

namespace tpsim::model {

// The residual stream entering a module: the op that last wrote it (none before the first layer), and whether
// that op is a residual add (stream_norm may fuse the norm reading it into its kernel).
struct ModuleInput {
  std::optional<OpId> ready;
  bool from_residual_add = false;
  std::vector<OpId> deps() const { return ready ? std::vector<OpId>{*ready} : std::vector<OpId>{}; }
};

// `a` followed by `b`: the inputs of an op that reads two lists of ops.
std::vector<OpId> joined(std::vector<OpId> a, const std::vector<OpId>& b);

// RMSNorm over [tokens, width]: reads the input and the weight, writes the output.
OpId rms_norm(ProgramBuilder& b, const std::string& name, int64_t tokens, int64_t width, const std::vector<OpId>& deps);

// residual += sum of `deps`' output, over [tokens, width].
OpId residual_add(ProgramBuilder& b, const std::string& name, int64_t tokens, int64_t width, std::vector<OpId> deps,
                  std::optional<OpId> residual);
// The stream a module's residual add writes over the rank's rows: residual_add, marked from_residual_add.
ModuleInput residual_stream(ProgramBuilder& b, const LayerContext& ctx, const std::string& name, std::vector<OpId> deps,
                            std::optional<OpId> residual);

// Whether the implementation runs the residual add before the norm of module `module` (ProgramBuilder's numbering:
// -1 the final norm) with that norm as one kernel in the forward (implementation.add_norm); every norm's backward
// fuses with its skip connection's add where any forward pair does.
bool fuses_add_norm(const LayerContext& ctx, int module);
// The RMSNorm of the stream `input` over the rank's rows, named `name`: a kernel of its own, or, where
// fuses_add_norm holds and the residual add that wrote `input` is the last kernel issued, that kernel continued
// (the sum read from registers, the normed rows written).
OpId stream_norm(ProgramBuilder& b, const LayerContext& ctx, const std::string& name, const ModuleInput& input);

// Causal attention of the pass's new tokens over the cached and new keys: FLOPs
// 4 b hq d (q c + q^2 / 2) for q new and c cached tokens; bytes: Q, K, V (cache and new), O, and
// the new K, V appended to the cache in inference phases. In a sliding-window layer (window w) each query sees
// its last w keys: FLOPs 4 b hq d times the integral of min(x, w) over the queries' positions x from c to c + q,
// and the cache read only within the window (min(c, w) + q keys).
OpId attention_core(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& input);
// Whether the implementation copies K and V out to every query head before attention (grouped-query
// layers only), and that copy (every cached and new token's K and V) and its backward (the copies'
// gradients summed per KV head).
bool repeats_kv(const LayerContext& ctx);
OpId repeat_kv(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& input);
OpId repeat_kv_backward(ProgramBuilder& b, const LayerContext& ctx, OpId grad);

// FlashAttention's backward over the same pass: 2.5 times the forward's FLOPs (five matmuls to the
// forward's two, as FlashAttention-2 counts them); reads Q, K, V, the output and its gradient, writes
// the gradients of Q, K and V.
OpId attention_core_backward(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& deps);

}  // namespace tpsim::model
