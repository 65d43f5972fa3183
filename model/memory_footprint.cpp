// Per-GPU bytes of weights, KV cache, activations and TP-mode buffers, from the layer's shapes.
#include "model/memory_footprint.hpp"

#include <algorithm>

#include "model/op.hpp"

namespace tpsim::model {
namespace {

// Parameters of one decoder layer's linear layers on one rank: q/k/v, o, gate/up/down.
double linear_parameters(const ArchSpec& a, const TpShard& s) {
  const double hd = static_cast<double>(a.head_dim), hidden = static_cast<double>(a.hidden);
  const double qkv_width = static_cast<double>(s.q_heads + 2 * s.kv_heads) * hd;
  return hidden * qkv_width + static_cast<double>(s.q_heads) * hd * hidden + 3.0 * hidden * static_cast<double>(s.ffn);
}

// The rest of a layer, replicated on every rank: two RMSNorms, QK-norms, q/k/v biases (of the local heads).
double small_parameters(const ArchSpec& a, const TpShard& s) {
  const double hd = static_cast<double>(a.head_dim);
  double p = 2.0 * static_cast<double>(a.hidden);  // two RMSNorms
  if (a.qk_norm) p += 2.0 * hd;
  if (a.qkv_bias) p += static_cast<double>(s.q_heads + 2 * s.kv_heads) * hd;
  return p;
}

// The largest number of tokens one pass of the workload runs (a generate's prefill).
double pass_tokens(const Workload& w) {
  return static_cast<double>(primary_pass(w).tokens());
}

}  // namespace

MemoryFootprint memory_footprint(const ArchSpec& a, const Workload& w, const Variant& v, int tp) {
  const TpShard s = shard_for_tp(a, tp);
  const double layers = static_cast<double>(w.layers);
  const double linear_bytes = w.dtype == Dtype::kFp8 ? kFp8Bytes : kBf16Bytes;
  const double hidden = static_cast<double>(a.hidden), hd = static_cast<double>(a.head_dim);
  const double vocab_rows = static_cast<double>((a.vocab + tp - 1) / tp);  // vocab-parallel
  MemoryFootprint m;
  m.weights_bytes = layers * (linear_parameters(a, s) * linear_bytes + small_parameters(a, s) * kBf16Bytes) +
                    (a.tied_embeddings ? 1.0 : 2.0) * vocab_rows * hidden * kBf16Bytes + hidden * kBf16Bytes;
  if (w.phase == Phase::kDecode || w.phase == Phase::kGenerate) {
    const double context = static_cast<double>(w.context_len + (w.phase == Phase::kGenerate ? w.gen_len : 1));
    const double kv_bytes = w.attention_dtype == Dtype::kFp8 ? kFp8Bytes : kBf16Bytes;
    m.kv_cache_bytes =
        2.0 * layers * static_cast<double>(s.kv_heads) * hd * static_cast<double>(w.batch) * context * kv_bytes;
  }
  const double tokens = pass_tokens(w);
  const bool sequence_sharded = v.mode == TpMode::kSp || v.mode == TpMode::kAsync;
  const double residual = (sequence_sharded ? tokens / tp : tokens) * hidden;
  // The block's gathered input, its projections' outputs and the row-parallel output before reduction.
  const double attention = tokens * (hidden + static_cast<double>(s.q_heads + 2 * s.kv_heads) * hd +
                                     static_cast<double>(s.q_heads) * hd + hidden);
  const double mlp = tokens * (hidden + 3.0 * static_cast<double>(s.ffn) + hidden);
  m.activation_bytes = (residual + std::max(attention, mlp)) * kBf16Bytes;
  if (v.mode == TpMode::kAsync) {
    m.buffer_bytes = 2.0 * tokens * hidden * kBf16Bytes;  // the all-gather's and the reduce-scatter's symmetric buffers
  } else if (v.mode == TpMode::kDtp) {
    m.buffer_bytes = static_cast<double>(v.delta + 1) * tokens * hidden * kBf16Bytes;  // partials in flight
  }
  return m;
}

}  // namespace tpsim::model
