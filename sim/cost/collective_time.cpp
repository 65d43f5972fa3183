// The closed forms: one step through a port, the plans' step patterns inside one node, and their totals.
#include "sim/cost/collective_time.hpp"

namespace tpsim::sim {

double step_seconds(const TransportParams& transport, double port_bytes, double port_Bps) {
  return transport.step_latency_s + port_bytes / (port_Bps * transport.link_efficiency);
}

int ring_step_count(model::CollectiveKind kind, int ranks) {
  return kind == model::CollectiveKind::kAllReduce ? 2 * (ranks - 1) : ranks - 1;
}

StepPattern ring_pattern(int steps, double tensor_bytes, int ranks) {
  return {steps, 1, tensor_bytes / ranks};
}

StepPattern direct_pattern(model::CollectiveKind kind, double tensor_bytes, int ranks) {
  return {1, ranks - 1, kind == model::CollectiveKind::kAllReduce ? tensor_bytes : tensor_bytes / ranks};
}

StepPattern two_shot_pattern(double tensor_bytes, int ranks) {
  return {2, ranks - 1, tensor_bytes / ranks};
}

StepPattern nvls_pattern(double tensor_bytes, int ranks) {
  return {1, ranks - 1, tensor_bytes / (ranks - 1)};
}

StepPattern multimem_pattern(model::CollectiveKind kind, double tensor_bytes, int ranks) {
  return kind == model::CollectiveKind::kAllReduce ? nvls_pattern(tensor_bytes, ranks)
                                                   : direct_pattern(kind, tensor_bytes, ranks);
}

StepPattern one_peer_pattern(double bytes) {
  return {1, 1, bytes};
}

double port_bytes(const StepPattern& pattern) {
  return static_cast<double>(pattern.peers) * pattern.message_bytes;
}

double pattern_seconds(const StepPattern& pattern, const TransportParams& transport, double port_Bps,
                       double call_latency_s) {
  return call_latency_s + pattern.steps * step_seconds(transport, port_bytes(pattern), port_Bps);
}

double ring_seconds(const TransportParams& transport, int steps, double tensor_bytes, int ranks, double port_Bps,
                    double call_latency_s) {
  return pattern_seconds(ring_pattern(steps, tensor_bytes, ranks), transport, port_Bps, call_latency_s);
}

double one_shot_seconds(const TransportParams& transport, model::CollectiveKind kind, double tensor_bytes, int ranks,
                        double port_Bps) {
  return pattern_seconds(direct_pattern(kind, tensor_bytes, ranks), transport, port_Bps);
}

double two_shot_seconds(const TransportParams& transport, double tensor_bytes, int ranks, double port_Bps) {
  return pattern_seconds(two_shot_pattern(tensor_bytes, ranks), transport, port_Bps);
}

double nvls_seconds(const TransportParams& transport, double tensor_bytes, int ranks, double port_Bps,
                    double call_latency_s) {
  return pattern_seconds(nvls_pattern(tensor_bytes, ranks), transport, port_Bps, call_latency_s);
}

double multimem_seconds(const TransportParams& transport, model::CollectiveKind kind, double tensor_bytes, int ranks,
                        double port_Bps) {
  return pattern_seconds(multimem_pattern(kind, tensor_bytes, ranks), transport, port_Bps);
}

double copy_step_seconds(const TransportParams& transport, double bytes, double port_Bps) {
  return pattern_seconds(one_peer_pattern(bytes), transport, port_Bps);
}

}  // namespace tpsim::sim
