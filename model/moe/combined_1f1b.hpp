// Megatron's combined 1F1B schedule (overlap_moe_expert_parallel_comm, "EP A2A overlap") for a training step
// without a pipeline: the forward of micro-batch k runs beside the backward of micro-batch k - 1, layer by layer
// (forward layer j with backward layer L-1-j), their MoE stages interleaved so that one micro-batch's all-to-alls
// run beside the other's compute. Megatron-LM's combined_1f1b_schedule_for_no_pipelining
// (megatron/core/pipeline_parallel/combined_1f1b.py) runs the first micro-batch's forward alone, then n - 1 phases
// of one forward and one backward, then the last backward alone; TransformerLayerSchedulePlan.run
// (megatron/core/models/common/model_chunk_schedule_plan.py) orders a layer pair as
//   comm:    combine backward | dispatch forward, dispatch backward | combine forward
//   compute: attention forward | experts' backward, experts' forward | attention backward
// (the expert all-to-alls on their own stream beside the compute stream). A dense layer of a mixed stack has no
// all-to-all: its forward and backward run in turn.
#pragma once

#include "model/graph/layer_context.hpp"
#include "model/parallel/tp_strategy.hpp"
#include "model/train/ddp_fsdp_sync.hpp"

namespace tpsim::model {

// Every micro-batch of the step in the combined order (ops named mb<k>.), the data-parallel reductions through
// `sync` as the plain order issues them; the optimizer is the caller's. Needs no recomputation and no FSDP (the
// loader refuses them).
void build_combined_1f1b_micro_batches(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& strategy,
                                       DataParallelSync& sync);

}  // namespace tpsim::model
