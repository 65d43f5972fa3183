// Selective activation recomputation: before a layer's backward, the forward ops whose outputs the
// backward reads but the save list does not keep are issued again, with the unsaved ops they read in
// turn, as a compiled graph's min-cut recomputes (nothing the backward does not need; collectives among
// them re-issued). Ignores: eager PyTorch re-running unneeded ops before the last needed one.
#pragma once

#include <map>
#include <vector>

#include "model/graph/program_builder.hpp"
#include "model/graph/workload.hpp"

namespace tpsim::model {

// One layer's forward ops: ids [begin, end) of the step graph.
struct ForwardSpan {
  OpId begin = 0;
  OpId end = 0;
};

// Whether `save` keeps the output of forward op `op`; `matmul_position` is the 1-based position of its
// matmul among the layer's (every_other_matmul keeps the odd ones): a linear run as separate GEMMs
// (separate q/k/v, gate/up) counts each, as TorchTitan's policy counts aten.mm calls. A collective of a group of
// one (tp 1) keeps nothing: the framework runs none.
bool kept_by(const SaveList& save, const Op& op, int matmul_position);

// Re-issues (stage recompute, on `b`'s current layer) the ops of `span` that `needed` reaches through
// unsaved ops: every needed op of the span that `save` does not keep, and what it reads. Ops outside the
// span (the layer's input) are kept by the checkpoint. With `cache_kept` (eager blocks: torch.utils.checkpoint's
// caching mode holds the output of every op its policy keeps until the recomputation replays the layer), the first
// re-issued op also reads each kept op that nothing else reads after the forward, so that it is held until then
// (a part of a linear run as several GEMMs is held as its linear's share already). Returns old id -> re-issued id.
std::map<OpId, OpId> recompute_unsaved(ProgramBuilder& b, ForwardSpan span, const std::vector<OpId>& needed,
                                       const SaveList& save, bool cache_kept = false);

}  // namespace tpsim::model
