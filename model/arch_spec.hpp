// Architecture of a pre-norm GQA SwiGLU decoder (Llama, Qwen2/3, Danube3; Qwen3-MoE and Mixtral with an MoE
// FFN in every layer): the numbers that decide every shape. Hybrid-attention stacks are not modelled yet.
#pragma once

#include <cstdint>
#include <string>

namespace tpsim::model {

// The mixture-of-experts FFN of every layer (none when experts is 0): a router sends each token to
// experts_per_token of `experts` SwiGLU experts of width expert_ffn, and sums their outputs by its weights.
struct MoeSpec {
  int64_t experts = 0;            // num_experts (qwen3_moe), num_local_experts (mixtral)
  int64_t experts_per_token = 0;  // num_experts_per_tok
  int64_t expert_ffn = 0;         // moe_intermediate_size (qwen3_moe), intermediate_size (mixtral)
  bool enabled() const { return experts > 0; }
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
};

// How one TP rank holds the layer: heads and FFN neurons per rank.
struct TpShard {
  int tp = 1;
  int64_t q_heads = 0;         // query heads per rank
  int64_t kv_heads = 0;        // KV heads per rank (1 when replicated)
  bool kv_replicated = false;  // kv_heads < tp: each KV head lives on tp / kv_heads ranks
  int64_t ffn = 0;             // intermediate neurons per rank (0 for an MoE FFN)
  int64_t experts = 0;         // an MoE FFN's experts per rank (whole experts, split by expert parallelism)
};

// Splits the layer over tp ranks as Megatron and vLLM do, or returns why it cannot:
// tp must divide the query heads and the (dense) FFN width; it must divide the KV heads, or be a
// multiple of them (KV heads are then replicated). An MoE FFN's experts are not split by tp but by expert
// parallelism (moe_layer.hpp) over `ep` GPUs, which must divide them.
TpShard shard_for_tp(const ArchSpec& arch, int tp, int ep = 1);

}  // namespace tpsim::model
