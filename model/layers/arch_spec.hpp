// Architecture of a pre-norm GQA SwiGLU decoder (Llama, Qwen2/3, Danube3; Qwen3-MoE and Mixtral with an MoE
// FFN in every layer or in some; Qwen3-Next with linear-attention layers between its full-attention ones): the
// numbers that decide every shape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpsim::model {

// Layers first to first + count - 1 of the model (a pipeline chunk's, or the whole stack's).
struct LayerRange {
  int64_t first = 0;
  int64_t count = 0;
};

// The mixture-of-experts FFN of every layer (none when experts is 0): a router sends each token to
// experts_per_token of `experts` SwiGLU experts of width expert_ffn, and sums their outputs by its weights.
struct MoeSpec {
  int64_t experts = 0;            // num_experts (qwen3_moe), num_local_experts (mixtral)
  int64_t experts_per_token = 0;  // num_experts_per_tok
  int64_t expert_ffn = 0;         // moe_intermediate_size (qwen3_moe), intermediate_size (mixtral)
  // A SwiGLU expert every token runs beside its routed ones (shared_expert_intermediate_size, or DeepSeek's
  // n_shared_experts x moe_intermediate_size; 0: none), TP-sharded like a dense FFN; Qwen's output is scaled by
  // a sigmoid gate of the token (shared_expert_gated), DeepSeek's is not.
  int64_t shared_expert_ffn = 0;
  bool shared_expert_gated = true;
  // DeepSeek's group-limited router (n_group, topk_group): the experts fall in `groups` equal groups and each
  // token picks its experts among the `group_limit` groups it scores highest. 1 and 1: no limit.
  int64_t groups = 1;
  int64_t group_limit = 1;
  bool group_limited() const { return group_limit < groups; }
  // Layers whose FFN is the dense SwiGLU of the model's intermediate width instead (decoder_sparse_step,
  // mlp_only_layers): layer i is dense when dense_layers[i]; empty: every layer is an MoE.
  std::vector<bool> dense_layers;
  bool enabled() const { return experts > 0; }
  // Whether layer `layer` (numbered in the model, from 0) runs the MoE FFN.
  bool is_moe(int64_t layer) const {
    return enabled() && !(layer >= 0 && static_cast<size_t>(layer) < dense_layers.size() && dense_layers[layer]);
  }
  // Whether any layer of the stack runs a dense FFN beside the MoE ones.
  bool has_dense_layers() const;
  // How many layers of the range run the MoE FFN.
  int64_t moe_count(LayerRange range) const;
  bool operator==(const MoeSpec&) const = default;  // every field (a memo's key)
};

// The linear-attention layers of a hybrid stack (Qwen3-Next's Gated DeltaNet; none when key_heads is 0): q and
// k of key_heads heads, v and the output gate z of value_heads heads, a causal depthwise convolution over q, k
// and v, the gated delta rule's recurrent state (key_head_dim x value_head_dim per value head), a gated RMSNorm
// and the output projection.
struct LinearAttentionSpec {
  int64_t key_heads = 0;       // linear_num_key_heads
  int64_t value_heads = 0;     // linear_num_value_heads
  int64_t key_head_dim = 0;    // linear_key_head_dim
  int64_t value_head_dim = 0;  // linear_value_head_dim
  int64_t conv_kernel = 0;     // linear_conv_kernel_dim
  // Bytes per element of the recurrent state an inference engine keeps: vLLM's mamba_ssm_cache_dtype "auto"
  // keeps the model's dtype (2) unless the config's mamba_ssm_dtype says float32 (4).
  double state_bytes = 2.0;
  std::vector<bool> linear_layers;  // layer i runs linear attention when linear_layers[i]; else full attention
  bool enabled() const { return key_heads > 0; }
  bool is_linear(int64_t layer) const {
    return layer >= 0 && static_cast<size_t>(layer) < linear_layers.size() && linear_layers[layer];
  }
  // How many layers of the range run linear attention.
  int64_t linear_count(LayerRange range) const;
  bool operator==(const LinearAttentionSpec&) const = default;  // every field (a memo's key)
};

// DeepSeek's multi-head latent attention (MLA; none when kv_lora_rank is 0): the hidden state is projected down
// to a query latent (q_lora_rank; 0: queries straight from the hidden state) and a KV latent (kv_lora_rank) with
// one rotary key part shared by all heads (rope_head_dim), each normed; the heads' queries (nope + rope wide)
// and keys and values (nope and value_head_dim wide) are projected up from them. The KV cache holds the latent
// and the rotary key: kv_lora_rank + rope_head_dim per token and layer, for all heads.
struct LatentAttentionSpec {
  int64_t q_lora_rank = 0;     // q_lora_rank (null: 0)
  int64_t kv_lora_rank = 0;    // kv_lora_rank
  int64_t rope_head_dim = 0;   // qk_rope_head_dim
  int64_t nope_head_dim = 0;   // qk_nope_head_dim
  int64_t value_head_dim = 0;  // v_head_dim
  bool enabled() const { return kv_lora_rank > 0; }
  int64_t qk_head_dim() const { return nope_head_dim + rope_head_dim; }
  int64_t cache_width() const { return kv_lora_rank + rope_head_dim; }
  bool operator==(const LatentAttentionSpec&) const = default;  // every field (a memo's key)
};

// What one layer runs: full or linear attention, and a dense or an MoE FFN.
struct LayerKind {
  bool linear_attention = false;
  bool moe = false;
  bool operator==(const LayerKind&) const = default;
};

// The norms of a layer: RMSNorm (weight only) or LayerNorm (weight and bias: GPT-2, GPT-NeoX, StarCoder2, Falcon, Phi).
enum class NormKind { kRms, kLayer };
// The FFN: gated (SwiGLU or GeGLU: gate and up of intermediate width, act(gate) * up, down) or plain (GPT-2's
// c_fc, GeLU, c_proj: one up projection of intermediate width).
enum class MlpKind { kGated, kPlain };

// GPT-style and windowed-attention options of a layer (docs/model.md, "Model types"). The defaults are the Llama
// layer's, so a model that sets none of them builds and counts as before.
struct LayerStyle {
  NormKind norm = NormKind::kRms;
  MlpKind mlp = MlpKind::kGated;
  // Biases on q/k/v, o and the FFN's linears (gpt2, gpt_neox, gpt_bigcode, starcoder2 use_bias, falcon bias,
  // phi). tpsim prices them inside the GEMMs' epilogues (an assumption: cuBLASLt's bias epilogue, Megatron's fused
  // bias-GeLU) and counts their parameters.
  bool linear_bias = false;
  bool lm_head_bias = false;  // phi's lm_head (nn.Linear with bias)
  // Attention and FFN read the same layer input and both add to the residual (gpt_neox use_parallel_residual,
  // falcon parallel_attn / new_decoder_architecture, phi).
  bool parallel_residual = false;
  // Norms per layer: 2 (pre-attention, pre-FFN), 1 (a parallel layer sharing its input norm: Falcon-7B, Phi) or 4
  // (Gemma 2/3: a norm before and after each module).
  int norms_per_layer = 2;
  // Learned absolute positions (GPT-2's and GPT-BigCode's wpe: n_positions rows of hidden width; 0: none).
  int64_t learned_positions = 0;
  // Sliding-window attention: each query attends to the last `window` keys (itself included) in the layers
  // window_layers marks (empty: every layer; 0: no window anywhere).
  int64_t window = 0;
  std::vector<bool> window_layers;
  // tanh soft-capping of the attention logits (Gemma 2: attn_logit_softcapping); 0: none. Recorded, not priced:
  // one tanh per score in FlashAttention's registers beside 4 d FLOPs of matmul per score (assumed negligible).
  double attention_softcap = 0.0;
  bool operator==(const LayerStyle&) const = default;  // every field (a memo's key)
};

struct ArchSpec {
  std::string name;              // preset name or config path
  std::string model_type;        // Hugging Face "model_type": llama, mistral, qwen2, qwen3, qwen3_moe or mixtral
  int64_t hidden = 0;            // hidden_size
  int64_t intermediate = 0;      // intermediate_size (FFN width of one SwiGLU branch; unused by an MoE FFN)
  int64_t heads = 0;             // num_attention_heads (query heads)
  int64_t kv_heads = 0;          // num_key_value_heads
  int64_t head_dim = 0;          // head_dim, or hidden / heads
  int64_t layers = 0;            // num_hidden_layers
  int64_t vocab = 0;             // vocab_size
  bool qk_norm = false;          // Qwen3: RMSNorm on q and k heads before RoPE
  bool qkv_bias = false;         // Qwen2: bias on the q/k/v projections (built into the model type)
  bool tied_embeddings = false;  // tie_word_embeddings: the LM head is the embedding matrix (one copy)
  std::string source;            // where the numbers come from
  MoeSpec moe;                   // the FFN of every layer but moe.dense_layers is an MoE when moe.enabled()
  // qwen3_next's full-attention layers: q_proj also writes a per-head gate whose sigmoid scales the attention
  // output before o_proj, and RoPE turns only rotary_fraction of each head (partial_rotary_factor).
  bool attention_output_gate = false;
  double rotary_fraction = 1.0;
  LinearAttentionSpec linear = {};  // a hybrid stack's linear-attention layers when linear.enabled()
  LatentAttentionSpec latent = {};  // every full-attention layer is MLA when latent.enabled()
  LayerStyle style = {};            // norms, FFN, biases, residual wiring, positions and attention window
  // The attention window of layer `layer` (numbered in the model, from 0): 0 when it attends to every key.
  int64_t window_at(int64_t layer) const {
    if (style.window == 0) return 0;
    if (style.window_layers.empty()) return style.window;
    const bool windowed = layer >= 0 && static_cast<size_t>(layer) < style.window_layers.size() &&
                          style.window_layers[static_cast<size_t>(layer)];
    return windowed ? style.window : 0;
  }
  // How many layers of the range attend through a window.
  int64_t windowed_count(LayerRange range) const;
  // Columns of the FFN's up projection per FFN neuron: 2 (gate and up) or 1 (plain).
  int64_t up_projections() const { return style.mlp == MlpKind::kGated ? 2 : 1; }
  // What layer `layer` (numbered in the model, from 0) runs.
  LayerKind kind(int64_t layer) const { return LayerKind{linear.is_linear(layer), moe.is_moe(layer)}; }
  // Whether some layer runs a dense FFN (every layer of a dense model; the dense layers of a mixed MoE stack).
  bool has_dense_ffn() const { return !moe.enabled() || moe.has_dense_layers(); }
  // Whether every layer of the range runs the same kind (a plain dense or MoE stack's always do).
  bool uniform(LayerRange range) const;
  // How many layers of the range run `kind`.
  int64_t count_of(LayerKind kind, LayerRange range) const;
  bool operator==(const ArchSpec&) const = default;  // every field (a memo's key)
};

// The four layer kinds in a fixed order (sums over a stack's kinds add them in this order).
inline constexpr LayerKind kLayerKinds[] = {{false, false}, {false, true}, {true, false}, {true, true}};

// How one TP rank holds the layer: heads and FFN neurons per rank.
struct TpShard {
  int tp = 1;
  int64_t q_heads = 0;            // query heads per rank
  int64_t kv_heads = 0;           // KV heads per rank (1 when replicated)
  bool kv_replicated = false;     // kv_heads < tp: each KV head lives on tp / kv_heads ranks
  int64_t ffn = 0;                // a dense FFN's intermediate neurons per rank (0 when every layer is an MoE)
  int64_t experts = 0;            // an MoE FFN's experts per rank (whole experts, split by expert parallelism)
  int64_t expert_ffn = 0;         // each of those experts' neurons on the rank: all, 1 / tp under expert TP, 1 / etp
  bool expert_tp = false;         // ep 1 under tp > 1: every rank holds every expert's 1 / tp slice
  int64_t shared_expert_ffn = 0;  // the shared expert's neurons per rank
  int64_t linear_key_heads = 0;   // a hybrid stack's linear-attention heads per rank
  int64_t linear_value_heads = 0;
};

// Splits the layer over tp ranks as Megatron and vLLM do, or returns why it cannot:
// tp must divide the query heads and the (dense) FFN width; it must divide the KV heads, or be a
// multiple of them (KV heads are then replicated). An MoE FFN's experts are split whole by expert
// parallelism (moe_layer.hpp) over `ep` GPUs, which must divide them; with ep 1 under tp > 1 each expert is
// split like a dense FFN instead (expert TP: vLLM's default, Megatron's expert tensor parallelism), and tp
// must divide its width.
// With ep > 1, `etp` > 1 slices each of a GPU's whole experts over etp GPUs (expert TP inside the expert-parallel
// group); etp must divide the expert width.
TpShard shard_for_tp(const ArchSpec& arch, int tp, int ep = 1, int etp = 1);

}  // namespace tpsim::model
