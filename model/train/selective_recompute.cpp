// The closure of the needed unsaved ops of one layer's forward, re-issued in their original order.
#include "model/train/selective_recompute.hpp"

#include <algorithm>
#include <functional>
#include <optional>
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

// The part of the same linear issued just before forward GEMM part `id` (Op::linear_part > 0), which it reads.
std::optional<OpId> earlier_part(const LayerGraph& graph, OpId id) {
  const Op& op = graph.op(id);
  if (op.kind != OpKind::kGemm || op.linear_part == 0) return std::nullopt;
  for (const Dep& dep : op.deps) {
    const Op& before = graph.op(dep.op);
    if (dep.data && before.kind == OpKind::kGemm && before.linear == op.linear &&
        before.linear_part == op.linear_part - 1) {
      return dep.op;
    }
  }
  return std::nullopt;
}

// Whether forward GEMM `id` is one part of a linear run as several GEMMs (separate q/k/v, gate/up).
bool split_part(const LayerGraph& graph, ForwardSpan span, OpId id) {
  if (graph.op(id).linear_part > 0) return true;
  for (OpId later = id + 1; later < span.end; ++later) {
    if (earlier_part(graph, later) == id) return true;
  }
  return false;
}

// The kept ops of the span that nothing reads after the forward: not needed by the backward, not read by an op
// issued again, not a part of a split linear.
std::vector<OpId> held_only_by_cache(const LayerGraph& graph, ForwardSpan span, const std::vector<OpId>& needed,
                                     const std::vector<bool>& recompute, const std::function<bool(OpId)>& kept) {
  std::vector<bool> read(span.end - span.begin, false);
  for (const OpId id : needed) {
    if (id >= span.begin && id < span.end) read[id - span.begin] = true;
  }
  for (OpId id = span.begin; id < span.end; ++id) {
    if (!recompute[id - span.begin]) continue;
    for (const Dep& dep : graph.op(id).deps) {
      if (dep.data && dep.op >= span.begin && dep.op < span.end) read[dep.op - span.begin] = true;
    }
  }
  std::vector<OpId> held;
  for (OpId id = span.begin; id < span.end; ++id) {
    if (kept(id) && !read[id - span.begin] && !split_part(graph, span, id)) held.push_back(id);
  }
  return held;
}

}  // namespace

bool kept_by(const SaveList& save, const Op& op, int matmul_position) {
  // A collective of a group of one is no op of the framework's (without TP, TorchTitan's block runs no
  // reduce_scatter_tensor for its policy to keep): what it stands for is kept only as what produced it.
  if (op.kind == OpKind::kCollective && op.group_size <= 1) return false;
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
                                       const SaveList& save, bool cache_kept) {
  const LayerGraph& graph = b.graph();
  const std::map<Matmul, int> positions = matmul_positions(graph, span);
  const auto inside = [&](OpId id) { return id >= span.begin && id < span.end; };
  const auto kept = [&](OpId id) {
    const Op& op = graph.op(id);
    const auto position = positions.find(Matmul{op.linear, op.linear_part});
    return kept_by(save, op, position == positions.end() ? 0 : position->second);
  };

  // Walk the data dependencies back from what the backward reads, stopping at kept ops and at the span. A linear
  // run as separate GEMMs reads on through its last part (each later part reads the one before): reading a part
  // reads the earlier parts' outputs too, each recomputed unless kept itself (TorchTitan's policy keeps q and v
  // of separate q, k, v and runs k again).
  std::vector<bool> recompute(span.end - span.begin, false);
  std::vector<OpId> pending;
  const auto need = [&](OpId id) {
    for (std::optional<OpId> part = id; part && inside(*part); part = earlier_part(graph, *part)) {
      if (!kept(*part) && !recompute[*part - span.begin]) pending.push_back(*part);
    }
  };
  for (const OpId id : needed) need(id);
  while (!pending.empty()) {
    const OpId id = pending.back();
    pending.pop_back();
    if (recompute[id - span.begin]) continue;
    recompute[id - span.begin] = true;
    for (const Dep& dep : graph.op(id).deps) {
      if (dep.data) need(dep.op);
    }
  }

  // Issue them in their forward order: their data inputs re-pointed at the re-issued ops; ordering-only
  // dependencies dropped (the builder adds the stream order of now), and a part's link to an earlier part that
  // is not issued again (kept: it reads nothing of it).
  std::map<OpId, OpId> reissued;
  const std::vector<OpId> cached =
      cache_kept ? held_only_by_cache(graph, span, needed, recompute, kept) : std::vector<OpId>{};
  for (OpId id = span.begin; id < span.end; ++id) {
    if (!recompute[id - span.begin]) continue;
    const Op original = graph.op(id);
    const std::optional<OpId> chained = earlier_part(graph, id);
    std::vector<Dep> deps;
    for (const Dep& dep : original.deps) {
      if (!dep.data || (chained == dep.op && reissued.count(dep.op) == 0)) continue;
      const auto again = reissued.find(dep.op);
      deps.push_back(Dep{again == reissued.end() ? dep.op : again->second, dep.rank_offset, true});
    }
    if (reissued.empty()) {
      for (const OpId held : cached) deps.push_back(Dep{held, 0, true});
    }
    b.set_module(original.module);
    reissued[id] = b.repeat(original, std::move(deps));
  }
  return reissued;
}

}  // namespace tpsim::model
