// Transformer Engine's bulk userbuffers overlaps in a column-parallel linear's backward (the async_tp
// userbuffers kernel; its forward and row-parallel pipelines are async_tp.hpp's in TE's orders).
#pragma once

#include <vector>

#include "model/parallel/tp_strategy.hpp"

namespace tpsim::model {

// The input gradient of column-parallel `linear` (forward GEMM `forward`) as TE's LayerNormLinear and Linear run
// it with ub_bulk_dgrad and ub_bulk_wgrad (transformer_engine/pytorch/module/linear.py, _Linear.backward;
// comm_gemm_overlap.cpp CommOverlapBase::bulk_overlap): the rank's saved rows all-gathered by a userbuffers kernel
// on the comm stream beside the data-gradient GEMM (fp8 under an fp8 recipe: fp8_buf), then the data gradient
// reduce-scattered (bf16) by one beside the weight-gradient GEMM, which reads the regathered rows. Each kernel
// holds the SMs implementation.userbuffer_sms gives its GEMM (qkv for the attention's linear, fc1 for the
// FFN's). Returns the ops producing the rank's rows of the input gradient.
std::vector<OpId> bulk_column_input_gradient(ProgramBuilder& b, const LayerContext& ctx, const ColumnLinear& linear,
                                             const std::vector<OpId>& grad_out, const std::vector<OpId>& saved_input);

}  // namespace tpsim::model
