// Parameter counts from the layer's shapes.
#include "model/parameter_count.hpp"

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

}  // namespace

double linear_parameters_per_layer(const ArchSpec& a, const TpShard& s, bool linear_attention) {
  const double hd = static_cast<double>(a.head_dim), hidden = static_cast<double>(a.hidden);
  const int64_t query_heads = (a.attention_output_gate ? 2 : 1) * s.q_heads;  // a gated q_proj writes the gate too
  const double qkv_width = static_cast<double>(query_heads + 2 * s.kv_heads) * hd;
  const double attention = linear_attention ? linear_attention_parameters(a, s)
                                            : hidden * qkv_width + static_cast<double>(s.q_heads) * hd * hidden;
  if (a.moe.enabled()) {
    // The router (replicated) and the rank's whole experts, and the shared expert's shard and gate.
    const double experts = static_cast<double>(a.moe.experts), width = static_cast<double>(s.expert_ffn);
    double p = attention + hidden * experts + static_cast<double>(s.experts) * 3.0 * hidden * width;
    if (s.shared_expert_ffn > 0) p += 3.0 * hidden * static_cast<double>(s.shared_expert_ffn) + hidden;
    return p;
  }
  return attention + 3.0 * hidden * static_cast<double>(s.ffn);
}

double linear_parameters_of_layers(const ArchSpec& a, const TpShard& s, int64_t layers) {
  if (!a.linear.enabled()) return static_cast<double>(layers) * linear_parameters_per_layer(a, s);
  const auto linear = static_cast<double>(a.linear.linear_count(layers));
  return (static_cast<double>(layers) - linear) * linear_parameters_per_layer(a, s) +
         linear * linear_parameters_per_layer(a, s, true);
}

double expert_parameters_per_layer(const ArchSpec& a, const TpShard& s) {
  // Expert TP: each rank's slices sync with the same slices of the other replicas, as the dense parameters do.
  if (s.expert_tp) return 0.0;
  return static_cast<double>(s.experts) * 3.0 * static_cast<double>(a.hidden) * static_cast<double>(s.expert_ffn);
}

double small_parameters_per_layer(const ArchSpec& a, const TpShard& s) {
  const double hd = static_cast<double>(a.head_dim);
  double p = 2.0 * static_cast<double>(a.hidden);  // two RMSNorms
  if (a.qk_norm) p += 2.0 * hd;
  if (a.qkv_bias) p += static_cast<double>(s.q_heads + 2 * s.kv_heads) * hd;
  return p;
}

double layer_parameters_at(const ArchSpec& a, const TpShard& s, int64_t layer) {
  return linear_parameters_per_layer(a, s, a.linear.is_linear(layer)) + small_parameters_per_layer(a, s);
}

double largest_layer_parameters(const ArchSpec& a, const TpShard& s) {
  const double full = linear_parameters_per_layer(a, s);
  const double linear = a.linear.enabled() ? linear_parameters_per_layer(a, s, true) : 0.0;
  return std::max(full, linear) + small_parameters_per_layer(a, s);
}

double layer_parameters_per_rank(const ArchSpec& a, const TpShard& s, int64_t layers) {
  if (a.linear.enabled()) {
    return linear_parameters_of_layers(a, s, layers) + static_cast<double>(layers) * small_parameters_per_layer(a, s);
  }
  return static_cast<double>(layers) * (linear_parameters_per_layer(a, s) + small_parameters_per_layer(a, s));
}

double embedding_parameters_per_rank(const ArchSpec& a, int tp) {
  const double vocab_rows = static_cast<double>((a.vocab + tp - 1) / tp);
  const double hidden = static_cast<double>(a.hidden);
  return (a.tied_embeddings ? 1.0 : 2.0) * vocab_rows * hidden + hidden;
}

double end_parameters_per_rank(const ArchSpec& a, int tp, bool embedding, bool head) {
  if (embedding && head) return embedding_parameters_per_rank(a, tp);
  const double matrix = static_cast<double>((a.vocab + tp - 1) / tp) * static_cast<double>(a.hidden);
  if (embedding) return matrix;
  return head ? matrix + static_cast<double>(a.hidden) : 0.0;
}

}  // namespace tpsim::model
