// A float32 CPU forward pass of a decoder checkpoint over one causal sequence (Eigen): RMSNorm, q/k/v
// (with Qwen2 biases and Qwen3 q/k norms), rotary embeddings (Hugging Face's rotate-half form), grouped
// causal attention, o_proj, SwiGLU FFN, residuals, final norm and LM head. It records, per layer, what
// the affinity statistics need. No KV cache, no batching: a calibration and checking tool.
#pragma once

#include <vector>

#include "shard/checkpoint.hpp"

namespace tpsim::shard {

// One layer's activations over the sequence's T tokens.
struct LayerTrace {
  Matrix x_attn;  // [T, D] residual entering the layer (before the input norm)
  Matrix attn;    // [T, H hd] attention output, the input of o_proj
  Matrix x_mlp;   // [T, D] residual before the post-attention norm
  Matrix gate;    // [T, I] gate pre-activation
  Matrix up;      // [T, I] up pre-activation
  Matrix act;     // [T, I] SwiGLU output silu(gate) * up, the input of down_proj
};

// Logits [T, V] (empty when `logits` is false); fills `traces` (one per layer) when given.
Matrix forward(const Checkpoint& checkpoint, const std::vector<int>& tokens, std::vector<LayerTrace>* traces,
               bool logits = true);

// Row-wise RMSNorm: x / sqrt(mean(x^2) + eps) * gain.
Matrix rms_norm(const Matrix& x, const Vector& gain, double eps);

}  // namespace tpsim::shard
