// Sums the saved tensors of a step graph by the stage of their producer and readers.
#include "model/memory/activation_memory.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "model/layers/fp8_recipe.hpp"

namespace tpsim::model {
namespace {

// Whether `reader`, a backward op, reads its input only as an fp8 weight gradient's saved input: the recipe's
// kernels of that operand (named <gemm>.wgrad.x.<kernel>, fp8_recipe.hpp; not the output gradient's, whose
// stand-in in a graph without the model's end may be a forward op), an fp8 weight-gradient GEMM reading it
// directly, or a TP all-gather whose readers all do so (the backward's gather of a linear's saved rows).
bool feeds_fp8_gemm(const LayerGraph& step, const std::vector<std::vector<OpId>>& readers, OpId reader) {
  static const std::string kSavedOperand = std::string(kWeightGradientSuffix) + ".x.";
  const Op& op = step.op(reader);
  if (op.quantisation) return op.name.find(kSavedOperand) != std::string::npos;
  if (op.kind == OpKind::kGemm) return op.fp8 && gemm_role_of(op.name) == GemmRole::kWeightGradient;
  if (op.kind != OpKind::kCollective || op.collective != CollectiveKind::kAllGather) return false;
  const std::vector<OpId>& next = readers[reader];
  return !next.empty() &&
         std::all_of(next.begin(), next.end(), [&](OpId r) { return feeds_fp8_gemm(step, readers, r); });
}

}  // namespace

double saved_bytes(const LayerGraph& step, const std::vector<std::vector<OpId>>& readers, OpId id,
                   SavedGemmInputs inputs) {
  const Op& op = step.op(id);
  std::vector<OpId> later;  // the readers that need the tensor after the forward
  for (const OpId reader : readers[id]) {
    const OpStage stage = step.op(reader).stage;
    if (stage == OpStage::kBackward || (op.stage == OpStage::kForward && stage == OpStage::kRecompute)) {
      later.push_back(reader);
    }
  }
  if (later.empty()) return 0.0;
  // An fp8 recipe's own outputs are fp8 already; bf16 activations are what TE casts (kBf16Bytes per element).
  if (inputs != SavedGemmInputs::kTransformerEngine || op.quantisation) return op.output_bytes;
  const auto fp8_inputs = static_cast<size_t>(
      std::count_if(later.begin(), later.end(), [&](OpId r) { return feeds_fp8_gemm(step, readers, r); }));
  if (fp8_inputs == 0) return op.output_bytes;
  const double fp8_copy = op.output_bytes * kFp8Bytes / kBf16Bytes;
  return fp8_inputs == later.size() ? fp8_copy : op.output_bytes + fp8_copy;
}

double saved_activation_peak_bytes(const LayerGraph& step, SavedGemmInputs inputs) {
  const SavedActivations saved = saved_activations(step, inputs);
  return saved.forward_bytes + saved.recompute_bytes;
}

SavedActivations saved_activations(const LayerGraph& step, SavedGemmInputs inputs) {
  const std::vector<std::vector<OpId>> readers = step.consumers();
  double forward_saved = 0;
  std::map<int, double> recompute_saved;  // layer -> bytes
  for (OpId id = 0; id < step.size(); ++id) {
    const Op& op = step.op(id);
    if (op.stage != OpStage::kForward && op.stage != OpStage::kRecompute) continue;
    const double bytes = saved_bytes(step, readers, id, inputs);
    if (op.stage == OpStage::kForward) {
      forward_saved += bytes;
    } else {
      recompute_saved[op.layer] += bytes;
    }
  }
  double largest_layer = 0;
  for (const auto& [layer, bytes] : recompute_saved) largest_layer = std::max(largest_layer, bytes);
  return SavedActivations{forward_saved, largest_layer};
}

}  // namespace tpsim::model
