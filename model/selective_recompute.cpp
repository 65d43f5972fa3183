// The closure of the needed unsaved ops of one layer's forward, re-issued in their original order.
#include "model/selective_recompute.hpp"

#include <algorithm>
#include <utility>

namespace tpsim::model {
namespace {

// A matmul as TorchTitan's policy counts them (aten.mm calls): each separate GEMM of a linear run as
// several (separate q/k/v, gate/up) is one; the pieces of an async-TP pipeline are not.
using Matmul = std::pair<int32_t, int32_t>;  // (linear, part)

// Position (1-based) of each forward matmul of the span, in issue order.
std::map<Matmul, int> matmul_positions(const LayerGraph& graph, ForwardSpan span) {
  std::map<Matmul, int> positions;
  for (OpId id = span.begin; id < span.end; ++id) {
    const Op& op = graph.op(id);
    const Matmul matmul{op.linear, op.linear_part};
    if (op.saved_as == SavedAs::kMatmul && op.linear >= 0 && positions.count(matmul) == 0) {
      const int position = static_cast<int>(positions.size()) + 1;
      positions[matmul] = position;
    }
  }
  return positions;
}

}  // namespace

bool kept_by(const SaveList& save, const Op& op, int matmul_position) {
  switch (op.saved_as) {
    case SavedAs::kMatmul:
      return save.matmul || (save.every_other_matmul && matmul_position % 2 == 1);
    case SavedAs::kAttention:
      return save.attention;
    case SavedAs::kAllGather:
      return save.all_gather;
    case SavedAs::kReduceScatter:
      return save.reduce_scatter;
    case SavedAs::kAllReduce:
      return save.all_reduce;
    case SavedAs::kAllToAll:
      return save.all_to_all;
    case SavedAs::kOther:
      return false;
  }
  return false;
}

std::map<OpId, OpId> recompute_unsaved(ProgramBuilder& b, ForwardSpan span, const std::vector<OpId>& needed,
                                       const SaveList& save) {
  const LayerGraph& graph = b.graph();
  const std::map<Matmul, int> positions = matmul_positions(graph, span);
  const auto inside = [&](OpId id) { return id >= span.begin && id < span.end; };
  const auto kept = [&](OpId id) {
    const Op& op = graph.op(id);
    const auto position = positions.find(Matmul{op.linear, op.linear_part});
    return kept_by(save, op, position == positions.end() ? 0 : position->second);
  };

  // Walk the data dependencies back from what the backward reads, stopping at kept ops and at the span.
  std::vector<bool> recompute(span.end - span.begin, false);
  std::vector<OpId> pending;
  for (const OpId id : needed) {
    if (inside(id) && !kept(id)) pending.push_back(id);
  }
  while (!pending.empty()) {
    const OpId id = pending.back();
    pending.pop_back();
    if (recompute[id - span.begin]) continue;
    recompute[id - span.begin] = true;
    for (const Dep& dep : graph.op(id).deps) {
      if (dep.data && inside(dep.op) && !kept(dep.op) && !recompute[dep.op - span.begin]) pending.push_back(dep.op);
    }
  }

  // Issue them in their forward order: their data inputs re-pointed at the re-issued ops; ordering-only
  // dependencies dropped (the builder adds the stream order of now).
  std::map<OpId, OpId> reissued;
  for (OpId id = span.begin; id < span.end; ++id) {
    if (!recompute[id - span.begin]) continue;
    const Op original = graph.op(id);
    std::vector<Dep> deps;
    for (const Dep& dep : original.deps) {
      if (!dep.data) continue;
      const auto again = reissued.find(dep.op);
      deps.push_back(Dep{again == reissued.end() ? dep.op : again->second, dep.rank_offset, true});
    }
    b.set_module(original.module);
    reissued[id] = b.repeat(original, std::move(deps));
  }
  return reissued;
}

}  // namespace tpsim::model
