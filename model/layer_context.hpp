// Everything a layer builder needs: architecture, per-rank shard, tokens and the variant.
#pragma once

#include "model/arch_spec.hpp"
#include "model/variant.hpp"
#include "model/workload.hpp"

namespace tpsim::model {

struct LayerContext {
  ArchSpec arch;
  TpShard shard;
  Workload workload;
  Variant variant;
  int64_t tokens = 0;        // tokens of the step (batch x seq_len)
  int64_t local_tokens = 0;  // tokens a rank holds between modules: tokens/tp under sp/async/nocomm
  double elem_bytes = 2.0;

  bool sequence_sharded() const { return variant.mode != TpMode::kTp; }
};

}  // namespace tpsim::model
