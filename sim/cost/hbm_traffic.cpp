// HBM accesses per link byte of NCCL's rings and send/recv (hbm_traffic.hpp).
#include "sim/cost/hbm_traffic.hpp"

#include <algorithm>

namespace tpsim::sim {

double fifo_bytes_per_payload_byte(model::Protocol protocol) {
  switch (protocol) {
    case model::Protocol::kLL:
    case model::Protocol::kLowLatency:
      return 2.0;  // 16-byte lines: 8 data bytes, two 4-byte flags
    case model::Protocol::kLL128:
      return 16.0 / 15.0;  // 128-byte lines: 15 data words, one flag word
    default:
      return 1.0;
  }
}

double ring_hbm_accesses_per_link_byte(model::CollectiveKind collective, model::Protocol protocol, int ranks) {
  const double w = fifo_bytes_per_payload_byte(protocol);
  const double n = std::max(2, ranks);
  if (collective == model::CollectiveKind::kAllReduce) return 2 * w + n / (n - 1);
  return 2 * w + 1 + 2 / (n - 1);
}

double point_to_point_hbm_accesses_per_link_byte(model::Protocol protocol) {
  return 2 + 2 * fifo_bytes_per_payload_byte(protocol);
}

}  // namespace tpsim::sim
