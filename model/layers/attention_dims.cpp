// Query-key pairs and keys read of an attention pass (attention_dims.hpp).
#include "model/layers/attention_dims.hpp"

#include <algorithm>

namespace tpsim::model {

double AttentionDims::pairs() const {
  if (!causal) return q * (c + q);
  if (w <= 0.0 || c + q <= w) return q * c + q * q / 2.0;
  if (c >= w) return q * w;
  return (w * w - c * c) / 2.0 + (c + q - w) * w;
}

double AttentionDims::keys() const {
  if (!causal) return c + q;
  return w > 0.0 ? std::min(c, w) + q : c + q;
}

}  // namespace tpsim::model
