// Architecture of a dense pre-norm GQA SwiGLU decoder (Llama, Qwen2/3, Danube3): the numbers
// that decide every shape. MoE and hybrid-attention stacks are not modelled yet.
#pragma once

#include <cstdint>
#include <string>

namespace tpsim::model {

struct ArchSpec {
  std::string name;              // preset name or config path
  std::string model_type;        // Hugging Face "model_type": llama, mistral, qwen2 or qwen3
  int64_t hidden = 0;            // hidden_size
  int64_t intermediate = 0;      // intermediate_size (FFN width of one SwiGLU branch)
  int64_t heads = 0;             // num_attention_heads (query heads)
  int64_t kv_heads = 0;          // num_key_value_heads
  int64_t head_dim = 0;          // head_dim, or hidden / heads
  int64_t layers = 0;            // num_hidden_layers
  int64_t vocab = 0;             // vocab_size
  bool qk_norm = false;          // Qwen3: RMSNorm on q and k heads before RoPE
  bool qkv_bias = false;         // Qwen2: bias on the q/k/v projections (built into the model type)
  bool tied_embeddings = false;  // tie_word_embeddings: the LM head is the embedding matrix (one copy)
  std::string source;            // where the numbers come from
};

// How one TP rank holds the layer: heads and FFN neurons per rank.
struct TpShard {
  int tp = 1;
  int64_t q_heads = 0;         // query heads per rank
  int64_t kv_heads = 0;        // KV heads per rank (1 when replicated)
  bool kv_replicated = false;  // kv_heads < tp: each KV head lives on tp / kv_heads ranks
  int64_t ffn = 0;             // intermediate neurons per rank
};

// Splits the layer over tp ranks as Megatron and vLLM do, or returns why it cannot:
// tp must divide the query heads and the FFN width; it must divide the KV heads, or be a
// multiple of them (KV heads are then replicated).
TpShard shard_for_tp(const ArchSpec& arch, int tp);

}  // namespace tpsim::model
