// The moe section's names (its reader: input/section_readers.cpp).
#include "model/moe/expert_parallel.hpp"

#include "base/units.hpp"

namespace tpsim::model {
std::string to_string(DeepEpMode mode) {
  return std::string(name_of(kDeepEpModeNames, mode));
}

bool runs_low_latency(const ExpertParallel& ep, bool inference, int64_t new_tokens) {
  if (ep.dispatcher != Dispatcher::kDeepEp || !inference) return false;
  return ep.deepep_mode == DeepEpMode::kLowLatency || (ep.deepep_mode == DeepEpMode::kAuto && new_tokens == 1);
}

std::string to_string(Dispatcher dispatcher) {
  return std::string(name_of(kDispatcherNames, dispatcher));
}

std::string to_string(Routing routing) {
  return std::string(name_of(kRoutingNames, routing));
}

std::string to_string(const ExpertParallel& ep) {
  std::string text = ep.routing == Routing::kZipf       ? "zipf(" + format_number("%g", ep.zipf_s) + ")"
                     : ep.routing == Routing::kFromFile ? "from_file(" + ep.routing_file + ")"
                                                        : "balanced";
  if (ep.drop) text += ", capacity " + format_number("%g", ep.capacity_factor) + " with drops";
  return text;
}

}  // namespace tpsim::model
