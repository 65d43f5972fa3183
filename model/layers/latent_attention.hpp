// DeepSeek's multi-head latent attention (MLA) module, forward and backward: RMSNorm, the down projection to the
// query and KV latents (replicated on every TP rank, over the gathered rows, as TorchTitan runs it), their norms,
// the heads' up projections, RoPE on the rotary parts, attention, and the row-parallel output projection. TP
// splits the heads; every rank holds the whole latent KV cache of its sequences. Decode runs the absorbed form
// vLLM, SGLang and FlashMLA run: attention over the cached latents, shared by all heads.
#pragma once

#include "model/layers/decoder_layer.hpp"

namespace tpsim::model {

// The module's forward; `saved` (may be null) receives what its backward reads.
ModuleInput latent_attention_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp,
                                     const ModuleInput& input, SavedModule* saved);
// Its backward: the output projection's, attention's, RoPE's, the up projections' and the latent norms'; the
// latent gradients (partial sums over each rank's heads) all-reduced over the TP group, then the replicated
// down projection's data and weight gradients and the input norm's backward.
ModuleInput latent_attention_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp,
                                      const SavedModule& saved, const ModuleInput& grad);

// Whether a pass runs the absorbed form: one new token per sequence in an inference phase.
bool absorbs_latent_attention(const LayerContext& ctx);

}  // namespace tpsim::model
