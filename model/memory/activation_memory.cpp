// Sums the saved tensors of a step graph by the stage of their producer and readers.
#include "model/memory/activation_memory.hpp"

#include <algorithm>
#include <map>

namespace tpsim::model {

double saved_activation_peak_bytes(const LayerGraph& step) {
  const SavedActivations saved = saved_activations(step);
  return saved.forward_bytes + saved.recompute_bytes;
}

SavedActivations saved_activations(const LayerGraph& step) {
  const std::vector<std::vector<OpId>> readers = step.consumers();
  double forward_saved = 0;
  std::map<int, double> recompute_saved;  // layer -> bytes
  for (OpId id = 0; id < step.size(); ++id) {
    const Op& op = step.op(id);
    if (op.stage != OpStage::kForward && op.stage != OpStage::kRecompute) continue;
    const bool read_later = std::any_of(readers[id].begin(), readers[id].end(), [&](OpId reader) {
      const OpStage stage = step.op(reader).stage;
      return stage == OpStage::kBackward || (op.stage == OpStage::kForward && stage == OpStage::kRecompute);
    });
    if (!read_later) continue;
    if (op.stage == OpStage::kForward) {
      forward_saved += op.output_bytes;
    } else {
      recompute_saved[op.layer] += op.output_bytes;
    }
  }
  double largest_layer = 0;
  for (const auto& [layer, bytes] : recompute_saved) largest_layer = std::max(largest_layer, bytes);
  return SavedActivations{forward_saved, largest_layer};
}

}  // namespace tpsim::model
