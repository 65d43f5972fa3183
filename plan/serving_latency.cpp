// Static and continuous batching's TTFT and TPOT from a simulated prefill and decode step.
#include "plan/serving_latency.hpp"

#include <algorithm>

namespace tpsim::plan {

ServedLatency served_latency(model::Batching batching, double prefill_s, double decode_s, int64_t batch,
                             int64_t gen_len) {
  if (batching == model::Batching::kStatic) return {prefill_s, decode_s};
  const double sequences = static_cast<double>(batch), lifetime = static_cast<double>(gen_len);
  const double per_sequence_prefill = prefill_s / sequences;
  ServedLatency served;
  served.tpot_s = decode_s + prefill_s / lifetime;
  served.ttft_s = served.tpot_s / 2 + decode_s + std::max(1.0, sequences / lifetime) * per_sequence_prefill;
  return served;
}

}  // namespace tpsim::plan
