// The moe section's names (its reader: input/section_readers.cpp).
#include "model/moe/expert_parallel.hpp"

#include "base/units.hpp"

namespace tpsim::model {
std::string to_string(DeepEpMode mode) {
  switch (mode) {
    case DeepEpMode::kNormal:
      return "normal";
    case DeepEpMode::kLowLatency:
      return "low_latency";
    default:
      return "auto";
  }
}

bool runs_low_latency(const ExpertParallel& ep, bool inference, int64_t new_tokens) {
  if (ep.dispatcher != Dispatcher::kDeepEp || !inference) return false;
  return ep.deepep_mode == DeepEpMode::kLowLatency || (ep.deepep_mode == DeepEpMode::kAuto && new_tokens == 1);
}

std::string to_string(Dispatcher dispatcher) {
  return dispatcher == Dispatcher::kDeepEp ? "deepep" : "nccl";
}

std::string to_string(Routing routing) {
  switch (routing) {
    case Routing::kZipf:
      return "zipf";
    case Routing::kFromFile:
      return "from_file";
    default:
      return "balanced";
  }
}

std::string to_string(const ExpertParallel& ep) {
  std::string text = ep.routing == Routing::kZipf       ? "zipf(" + format_number("%g", ep.zipf_s) + ")"
                     : ep.routing == Routing::kFromFile ? "from_file(" + ep.routing_file + ")"
                                                        : "balanced";
  if (ep.drop) text += ", capacity " + format_number("%g", ep.capacity_factor) + " with drops";
  return text;
}

}  // namespace tpsim::model
