// Sums the saved tensors of a step graph by the stage of their producer and readers.
#include "model/memory/activation_memory.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

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

// A linear run as separate GEMMs (separate q, k, v; gate and up) whose parts are split between kept and
// recomputed: the graph's last part stands for the whole output (its readers read it alone), so the whole is counted
// where the last part is (kept: the forward's saved set; run again: the recomputation's). A selective policy keeps
// parts one by one (TorchTitan's counts aten.mm calls: q and v of q, k, v, the gate of gate and up), and what the
// backward reads of a kept part is held from the forward (torch's partitioner bans a MUST_SAVE op from
// recomputation; torch/_functorch/partitioners.py should_ban_recomputation), of a part run again only while its
// layer's recomputation lives. Moves each part's share of the whole, by its columns, to where that part is held.
struct PartKey {
  int layer;
  int32_t linear;
  int32_t part;
  bool operator<(const PartKey& o) const { return std::tie(layer, linear, part) < std::tie(o.layer, o.linear, o.part); }
};

// The bytes to move from the recomputation's saved set to the forward's (negative: the other way), per layer.
std::map<int, double> split_linear_corrections(const LayerGraph& step, const std::vector<double>& counted) {
  std::map<PartKey, std::vector<OpId>> forward, recomputed;
  for (OpId id = 0; id < step.size(); ++id) {
    const Op& op = step.op(id);
    if (op.kind != OpKind::kGemm || op.linear < 0) continue;
    if (op.stage == OpStage::kForward) forward[{op.layer, op.linear, op.linear_part}].push_back(id);
    if (op.stage == OpStage::kRecompute) recomputed[{op.layer, op.linear, op.linear_part}].push_back(id);
  }
  std::map<int, double> moved;
  for (const auto& [key, ids] : forward) {
    // Each last part of a linear of several parts, issued as one GEMM (not as an async-TP pipeline's pieces).
    if (key.part == 0 || ids.size() != 1 || forward.count({key.layer, key.linear, key.part + 1}) > 0) continue;
    const auto again = recomputed.find(key);
    const bool last_kept = again == recomputed.end();
    const OpId last = ids.front();
    const double whole = last_kept ? counted[last] : (again->second.size() == 1 ? counted[again->second.front()] : 0);
    if (whole <= 0) continue;  // nothing after the forward reads the linear's output
    double columns = 0;
    std::vector<std::pair<double, bool>> parts;  // each part's columns, and whether it is kept
    bool single = true;
    for (int32_t p = 0; p <= key.part; ++p) {
      const auto found = forward.find({key.layer, key.linear, p});
      if (found == forward.end() || found->second.size() != 1) single = false;
      if (!single) break;
      const auto n = static_cast<double>(step.op(found->second.front()).gemm.n);
      columns += n;
      parts.emplace_back(n, recomputed.count({key.layer, key.linear, p}) == 0);
    }
    if (!single || columns <= 0) continue;
    for (const auto& [n, kept] : parts) {
      if (kept != last_kept) moved[key.layer] += (kept ? 1.0 : -1.0) * whole * n / columns;
    }
  }
  return moved;
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
  std::vector<double> counted(step.size(), 0.0);
  for (OpId id = 0; id < step.size(); ++id) {
    const Op& op = step.op(id);
    if (op.stage != OpStage::kForward && op.stage != OpStage::kRecompute) continue;
    counted[id] = saved_bytes(step, readers, id, inputs);
    if (op.stage == OpStage::kForward) {
      forward_saved += counted[id];
    } else {
      recompute_saved[op.layer] += counted[id];
    }
  }
  for (const auto& [layer, bytes] : split_linear_corrections(step, counted)) {
    forward_saved += bytes;
    recompute_saved[layer] -= bytes;
  }
  double largest_layer = 0;
  for (const auto& [layer, bytes] : recompute_saved) largest_layer = std::max(largest_layer, bytes);
  return SavedActivations{forward_saved, largest_layer};
}

}  // namespace tpsim::model
