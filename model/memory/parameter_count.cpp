// Parameter counts from the layer's shapes.
#include "model/memory/parameter_count.hpp"

#include <algorithm>

namespace tpsim::model {

namespace {

// A linear-attention layer's projections on one rank: in_proj (q, k, v, z and a, b) and out_proj, and its
// convolution's taps.
double linear_attention_parameters(const ArchSpec& a, const TpShard& s) {
  const LinearAttentionSpec& l = a.linear;
  const double hidden = static_cast<double>(a.hidden);
  const double keys = static_cast<double>(s.linear_key_heads * l.key_head_dim);
  const double values = static_cast<double>(s.linear_value_heads * l.value_head_dim);
  const double in_cols = 2.0 * keys + 2.0 * values + 2.0 * static_cast<double>(s.linear_value_heads);
  return hidden * in_cols + values * hidden + (2.0 * keys + values) * static_cast<double>(l.conv_kernel);
}

// An MLA layer's projections on one rank: the replicated down projection (query latent, or the rank's heads'
// queries without one; KV latent and rotary key), the heads' up projections and o_proj.
double latent_attention_parameters(const ArchSpec& a, const TpShard& s) {
  const LatentAttentionSpec& l = a.latent;
  const double hidden = static_cast<double>(a.hidden), heads = static_cast<double>(s.q_heads);
  const double qk = static_cast<double>(l.qk_head_dim()), rank_q = static_cast<double>(l.q_lora_rank);
  const double queries = l.q_lora_rank > 0 ? hidden * rank_q + rank_q * heads * qk : hidden * heads * qk;
  const double keys_values =
      hidden * static_cast<double>(l.cache_width()) +
      static_cast<double>(l.kv_lora_rank) * heads * static_cast<double>(l.nope_head_dim + l.value_head_dim);
  return queries + keys_values + heads * static_cast<double>(l.value_head_dim) * hidden;
}

// One norm's parameters: RMSNorm's weight, or LayerNorm's weight and bias.
double norm_parameters(const ArchSpec& a) {
  return (a.style.norm == NormKind::kLayer ? 2.0 : 1.0) * static_cast<double>(a.hidden);
}

// Learned absolute positions (GPT-2's wpe), whole on every rank as Megatron keeps its position embedding.
double position_parameters(const ArchSpec& a) {
  return static_cast<double>(a.style.learned_positions) * static_cast<double>(a.hidden);
}

}  // namespace

double linear_parameters_per_layer(const ArchSpec& a, const TpShard& s, LayerKind kind) {
  const double hd = static_cast<double>(a.head_dim), hidden = static_cast<double>(a.hidden);
  const int64_t query_heads = (a.attention_output_gate ? 2 : 1) * s.q_heads;  // a gated q_proj writes the gate too
  const double qkv_width = static_cast<double>(query_heads + 2 * s.kv_heads) * hd;
  const double attention = kind.linear_attention ? linear_attention_parameters(a, s)
                           : a.latent.enabled()  ? latent_attention_parameters(a, s)
                                                 : hidden * qkv_width + static_cast<double>(s.q_heads) * hd * hidden;
  if (kind.moe) {
    // The router (replicated) and the rank's whole experts, and the shared expert's shard and gate.
    const double experts = static_cast<double>(a.moe.experts), width = static_cast<double>(s.expert_ffn);
    double p = attention + hidden * experts + static_cast<double>(s.experts) * 3.0 * hidden * width;
    if (s.shared_expert_ffn > 0) {
      p += 3.0 * hidden * static_cast<double>(s.shared_expert_ffn) + (a.moe.shared_expert_gated ? hidden : 0.0);
    }
    return p;
  }
  // gate, up and down (a gated FFN), or up and down (a plain one).
  return attention + static_cast<double>(a.up_projections() + 1) * hidden * static_cast<double>(s.ffn);
}

double linear_parameters_of_layers(const ArchSpec& a, const TpShard& s, LayerRange range) {
  if (a.uniform(range))
    return static_cast<double>(range.count) * linear_parameters_per_layer(a, s, a.kind(range.first));
  double sum = 0.0;
  for (const LayerKind kind : kLayerKinds) {
    if (const int64_t count = a.count_of(kind, range); count > 0) {
      sum += static_cast<double>(count) * linear_parameters_per_layer(a, s, kind);
    }
  }
  return sum;
}

double expert_parameters_at(const ArchSpec& a, const TpShard& s, int64_t layer) {
  // Expert TP: each rank's slices sync with the same slices of the other replicas, as the dense parameters do.
  if (s.expert_tp || !a.moe.is_moe(layer)) return 0.0;
  return static_cast<double>(s.experts) * 3.0 * static_cast<double>(a.hidden) * static_cast<double>(s.expert_ffn);
}

double small_parameters_per_layer(const ArchSpec& a, const TpShard& s) {
  const double hd = static_cast<double>(a.head_dim);
  double p = static_cast<double>(a.style.norms_per_layer) * norm_parameters(a);
  if (a.qk_norm) p += 2.0 * hd;
  if (a.qkv_bias || a.style.linear_bias) p += static_cast<double>(s.q_heads + 2 * s.kv_heads) * hd;
  if (a.style.linear_bias) {
    // The row-parallel linears' biases (o, down) are whole on every rank, added once after the reduction
    // (Megatron's RowParallelLinear); the column-parallel ones' (up, and gate) are split with their columns.
    const double hidden = static_cast<double>(a.hidden);
    p += 2.0 * hidden + (a.has_dense_ffn() ? static_cast<double>(a.up_projections() * s.ffn) : 0.0);
  }
  if (a.latent.enabled()) p += static_cast<double>(a.latent.q_lora_rank + a.latent.kv_lora_rank);  // latent norms
  return p;
}

double layer_parameters_at(const ArchSpec& a, const TpShard& s, int64_t layer) {
  return linear_parameters_per_layer(a, s, a.kind(layer)) + small_parameters_per_layer(a, s);
}

double largest_layer_parameters(const ArchSpec& a, const TpShard& s, LayerRange range) {
  double largest = 0.0;
  for (const LayerKind kind : kLayerKinds) {
    if (a.count_of(kind, range) > 0) largest = std::max(largest, linear_parameters_per_layer(a, s, kind));
  }
  return largest + small_parameters_per_layer(a, s);
}

double layer_parameters_per_rank(const ArchSpec& a, const TpShard& s, LayerRange range) {
  const auto layers = static_cast<double>(range.count);
  if (a.uniform(range)) {
    return layers * (linear_parameters_per_layer(a, s, a.kind(range.first)) + small_parameters_per_layer(a, s));
  }
  return linear_parameters_of_layers(a, s, range) + layers * small_parameters_per_layer(a, s);
}

double embedding_parameters_per_rank(const ArchSpec& a, int tp) {
  const double vocab_rows = static_cast<double>((a.vocab + tp - 1) / tp);
  const double hidden = static_cast<double>(a.hidden);
  return (a.tied_embeddings ? 1.0 : 2.0) * vocab_rows * hidden + position_parameters(a) + norm_parameters(a) +
         (a.style.lm_head_bias ? vocab_rows : 0.0);
}

double end_parameters_per_rank(const ArchSpec& a, int tp, bool embedding, bool head) {
  if (embedding && head) return embedding_parameters_per_rank(a, tp);
  const double vocab_rows = static_cast<double>((a.vocab + tp - 1) / tp);
  const double matrix = vocab_rows * static_cast<double>(a.hidden);
  if (embedding) return matrix + position_parameters(a);
  return head ? matrix + norm_parameters(a) + (a.style.lm_head_bias ? vocab_rows : 0.0) : 0.0;
}

double tied_embedding_gradient_bytes(const ArchSpec& arch, int tp, int data_parallel_shards) {
  return kGradientBytesPerParameter * end_parameters_per_rank(arch, tp, true, false) / data_parallel_shards;
}

}  // namespace tpsim::model
