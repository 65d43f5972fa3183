// Architecture of a pre-norm GQA SwiGLU decoder (Llama, Qwen2/3, Danube3; Qwen3-MoE and Mixtral with an MoE
// FFN in every layer; Qwen3-Next with linear-attention layers between its full-attention ones): the numbers that
// decide every shape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpsim::model {

// The mixture-of-experts FFN of every layer (none when experts is 0): a router sends each token to
// experts_per_token of `experts` SwiGLU experts of width expert_ffn, and sums their outputs by its weights.
struct MoeSpec {
  int64_t experts = 0;            // num_experts (qwen3_moe), num_local_experts (mixtral)
  int64_t experts_per_token = 0;  // num_experts_per_tok
  int64_t expert_ffn = 0;         // moe_intermediate_size (qwen3_moe), intermediate_size (mixtral)
  // A SwiGLU expert every token runs beside its routed ones (shared_expert_intermediate_size; 0: none),
  // TP-sharded like a dense FFN, its output scaled by a sigmoid gate of the token (qwen2_moe, qwen3_next).
  int64_t shared_expert_ffn = 0;
  bool enabled() const { return experts > 0; }
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
  // Layers among the first `layers` that run linear attention.
  int64_t linear_count(int64_t layers) const;
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
  MoeSpec moe;                   // every layer's FFN is an MoE when moe.enabled()
  // qwen3_next's full-attention layers: q_proj also writes a per-head gate whose sigmoid scales the attention
  // output before o_proj, and RoPE turns only rotary_fraction of each head (partial_rotary_factor).
  bool attention_output_gate = false;
  double rotary_fraction = 1.0;
  LinearAttentionSpec linear = {};  // a hybrid stack's linear-attention layers when linear.enabled()
};

// How one TP rank holds the layer: heads and FFN neurons per rank.
struct TpShard {
  int tp = 1;
  int64_t q_heads = 0;            // query heads per rank
  int64_t kv_heads = 0;           // KV heads per rank (1 when replicated)
  bool kv_replicated = false;     // kv_heads < tp: each KV head lives on tp / kv_heads ranks
  int64_t ffn = 0;                // intermediate neurons per rank (0 for an MoE FFN)
  int64_t experts = 0;            // an MoE FFN's experts per rank (whole experts, split by expert parallelism)
  int64_t expert_ffn = 0;         // each of those experts' neurons on the rank: all, or 1 / tp under expert TP
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
TpShard shard_for_tp(const ArchSpec& arch, int tp, int ep = 1);

}  // namespace tpsim::model
