// A hybrid stack's linear-attention module (Qwen3-Next's Gated DeltaNet), forward and backward: RMSNorm, the
// column-parallel input projections (q, k, v and the output gate z; the decay and write-strength inputs a, b),
// the causal depthwise convolution, the gated delta rule (chunked over a pass's tokens, or one recurrent step
// per sequence in decode), the gated RMSNorm and the row-parallel output projection. TP splits the key and
// value heads, as vLLM does.
#pragma once

#include "model/layers/decoder_layer.hpp"

namespace tpsim::model {

// The chunk length of FLA's chunked gated delta rule (fla/ops/gated_delta_rule/chunk.py: 64, the only size
// Qwen3-Next's kernels run).
inline constexpr int64_t kDeltaRuleChunk = 64;
// The value columns one program of the chunked state pass owns: assumed 64, the larger of the BV blocks FLA's
// chunk_gated_delta_rule_fwd_h autotunes among (32, 64); a chain is one (sequence, value head, block).
inline constexpr int64_t kDeltaRuleValueBlock = 64;

// FLOPs per token per value head of the chunked gated delta rule with chunk C: 2C(3 dk + 2 dv) for the
// chunk-local products (K K^T, Q K^T, the WY factors W and U, attention x new values), 6 dk dv for the
// state (W S, Q S, K^T V), and 2C^2/3 for the triangular solve.
double chunked_delta_rule_flops_per_token(int64_t key_dim, int64_t value_dim);

// The module's forward; `saved` (may be null) receives what its backward reads.
ModuleInput linear_attention_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp,
                                     const ModuleInput& input, SavedModule* saved);
// Its backward: the output projection's, the gated norm's, the rule's (chunked, at the forward's cost x the
// profile's linear_attention.backward_ratio), the convolution's and the input projections'.
ModuleInput linear_attention_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp,
                                      const SavedModule& saved, const ModuleInput& grad);

// The linear parts of its input projection: q, k, v and z in one GEMM and a, b in another, as both
// transformers and vLLM run them.
void set_linear_attention_parts(ProgramBuilder& b, const LayerContext& ctx);

}  // namespace tpsim::model
