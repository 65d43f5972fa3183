// Context parallelism's names and the zig-zag split's attention work per rank and ring step.
#include "model/parallel/context_parallel.hpp"

#include "model/graph/op.hpp"

namespace tpsim::model {

std::string to_string(CpCommType type) {
  return std::string(name_of(kCpCommTypeNames, type));
}

double context_parallel_buffer_bytes(const ContextParallel& cp, double tokens, double q_heads, double kv_heads,
                                     double head_dim) {
  if (!cp.enabled()) return 0.0;
  const double kv = 2.0 * tokens * kv_heads * head_dim * kBf16Bytes;  // the rank's K and V
  switch (cp.comm) {
    case CpCommType::kAllGather:
      return 2.0 * cp.degree * kv;
    case CpCommType::kA2a:
      return tokens * q_heads * head_dim * kBf16Bytes + kv;
    case CpCommType::kTorchAllGather:
      return 0.0;
    case CpCommType::kP2p:
      break;
  }
  return 4.0 * kv;
}

double context_parallel_attention_transient_bytes(const ContextParallel& cp, double tokens, double q_heads,
                                                  double kv_heads, double head_dim) {
  if (!cp.enabled() || cp.comm != CpCommType::kTorchAllGather) return 0.0;
  const double q = tokens * q_heads * head_dim, kv = 2.0 * tokens * kv_heads * head_dim;  // elements: Q; K and V
  const double gathered = cp.degree * kv * kBf16Bytes;
  const double accumulators = (q + kv) * kFp32Bytes, in_flight = 2.0 * kv * kFp32Bytes;
  return gathered + accumulators + in_flight + (q + kv) * kBf16Bytes;
}

std::vector<int> zigzag_chunks(int cp, int rank) {
  return {rank, 2 * cp - 1 - rank};
}

namespace {

// Causal pairs of queries in chunk q against keys in chunk k, chunks of `c` tokens.
double chunk_pairs(int q, int k, double c) {
  if (q > k) return c * c;
  return q == k ? c * c / 2.0 : 0.0;
}

}  // namespace

double zigzag_pairs(int64_t seq_len, int cp, int rank, int step) {
  const double c = static_cast<double>(seq_len) / (2.0 * cp);
  const int source = ((rank - step) % cp + cp) % cp;
  double pairs = 0;
  for (const int q : zigzag_chunks(cp, rank)) {
    for (const int k : zigzag_chunks(cp, source)) pairs += chunk_pairs(q, k, c);
  }
  return pairs;
}

double contiguous_pairs(int64_t seq_len, int cp, int rank, int step) {
  const int source = ((rank - step) % cp + cp) % cp;
  return chunk_pairs(rank, source, static_cast<double>(seq_len) / cp);
}

}  // namespace tpsim::model
