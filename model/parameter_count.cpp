// Parameter counts from the layer's shapes.
#include "model/parameter_count.hpp"

namespace tpsim::model {

double linear_parameters_per_layer(const ArchSpec& a, const TpShard& s) {
  const double hd = static_cast<double>(a.head_dim), hidden = static_cast<double>(a.hidden);
  const double qkv_width = static_cast<double>(s.q_heads + 2 * s.kv_heads) * hd;
  const double attention = hidden * qkv_width + static_cast<double>(s.q_heads) * hd * hidden;
  if (a.moe.enabled()) {
    // The router (replicated) and the rank's whole experts.
    const double experts = static_cast<double>(a.moe.experts), width = static_cast<double>(a.moe.expert_ffn);
    return attention + hidden * experts + static_cast<double>(s.experts) * 3.0 * hidden * width;
  }
  return attention + 3.0 * hidden * static_cast<double>(s.ffn);
}

double expert_parameters_per_layer(const ArchSpec& a, const TpShard& s) {
  return static_cast<double>(s.experts) * 3.0 * static_cast<double>(a.hidden) * static_cast<double>(a.moe.expert_ffn);
}

double small_parameters_per_layer(const ArchSpec& a, const TpShard& s) {
  const double hd = static_cast<double>(a.head_dim);
  double p = 2.0 * static_cast<double>(a.hidden);  // two RMSNorms
  if (a.qk_norm) p += 2.0 * hd;
  if (a.qkv_bias) p += static_cast<double>(s.q_heads + 2 * s.kv_heads) * hd;
  return p;
}

double layer_parameters_per_rank(const ArchSpec& a, const TpShard& s, int64_t layers) {
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
