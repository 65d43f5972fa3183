// Everything a layer builder needs: architecture, per-rank shard, tokens and the variant.
#pragma once

#include "model/graph/variant.hpp"
#include "model/graph/workload.hpp"
#include "model/layers/arch_spec.hpp"

namespace tpsim::model {

struct LayerContext {
  ArchSpec arch;
  TpShard shard;
  Workload workload;
  Pass pass;
  Variant variant;
  int64_t tokens = 0;        // tokens of the pass (batch x new tokens per sequence)
  int64_t local_tokens = 0;  // tokens a rank holds between modules: tokens/tp under sp/async/nocomm
  double elem_bytes = 2.0;
  // Norms and residuals on tokens/tp: sp and async always; nocomm whenever tokens divide (its
  // ceiling is then never slower than sp); tp and dtp never.
  bool sequence_sharded = false;

  // Whether a sequence-parallel collective is preceded (reduce-scatter) or followed (all-gather) by a copy into its
  // layout: the implementation's sp_layout_copies, over a TP group of more than one GPU (at tp 1 the framework
  // applies no TP plan: its collectives move nothing and it copies nothing).
  bool layout_copies() const { return workload.implementation.sp_layout_copies && shard.tp > 1; }
};

}  // namespace tpsim::model
