// An MoE FFN module, forward and backward, as Megatron's all-to-all token dispatcher runs it with expert TP 1:
// RMSNorm, router GEMM and top-k, the permutation of each token's copies by expert, the dispatch all-to-all
// over the expert-parallel group, the local experts' grouped gate/up GEMM, SwiGLU and grouped down GEMM, the
// combine all-to-all back, and the un-permutation that sums each token's copies by the router's weights. Every
// op outside the experts runs over the rank's rows of the residual stream (its 1/tp under sequence
// parallelism); the experts compute the busiest GPU's copies (moe_routing.hpp).
#pragma once

#include "model/layers/decoder_layer.hpp"

namespace tpsim::model {

ModuleInput moe_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const ModuleInput& input,
                        SavedModule* saved);

// moe_forward in three stages, so that two micro-batches' stages can interleave (two-batch overlap: one's
// all-to-all beside the other's compute): the router, top-k, permutation and dispatch; the experts and the
// combine; the un-permutation, the shared expert and the residual add. What one stage hands the next:
// The shapes one rank's MoE module works on (the busiest GPU's routing of its layer).
struct MoeShape {
  int64_t tokens = 0;    // the rows it routes: the rank's rows of the residual stream (all the pass's: expert TP)
  int64_t copies = 0;    // tokens x experts_per_token: the rows it permutes and sends
  int64_t rows = 0;      // the copies its experts compute: the busiest GPU's (moe_routing.hpp)
  double mean_rows = 0;  // the mean GPU's, for the model FLOPs
  int64_t local_experts = 0;
  int64_t active_experts = 0;  // the busiest GPU's experts that receive copies: its grouped GEMMs' problems
  int ep = 1;
  int etp = 1;  // expert TP inside the group: each expert sliced over etp GPUs (rows: the slice's gathered copies)
  bool all_to_all = false;  // the experts live on other GPUs and the mode communicates
  // DeepEP (moe.dispatcher deepep): the group's tokens the busiest GPU receives (once each), and the distinct nodes
  // each of the rank's tokens goes to (moe_routing.hpp).
  bool deepep = false;
  // DeepEP's low-latency kernels (decode): one message per copy, fp8 on dispatch; the copies permuted into each
  // expert's buffer and combined by the kernels themselves.
  bool low_latency = false;
  double received_tokens = 0;
  double destination_nodes = 1;
  bool spans_nodes = false;    // the expert-parallel group spans nodes
  double remote_fraction = 0;  // the group's GPUs on other nodes, as a share of it
  bool sorts = false;          // received copies arrive grouped by source: sorted by local expert around the GEMMs
  int64_t hidden = 0;
  int64_t ffn = 0;
  double elem = 2.0;
};

struct MoeForward {
  MoeShape shape;  // routed once per layer and pass, for all three stages
  ModuleInput input;
  std::vector<OpId> normed;  // the router's input rows
  OpId top_k = 0, received = 0, gate_up = 0, act = 0, returned = 0;
};
MoeForward moe_forward_dispatch(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const ModuleInput& input);
void moe_forward_experts(ProgramBuilder& b, MoeForward& f);
ModuleInput moe_forward_combine(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const MoeForward& f,
                                SavedModule* saved);
// The combine stage in two parts, as a decode step's two-batch overlap orders them (SGLang's op_shared_experts beside
// the dispatch in flight, op_output after the combine): the shared expert (returns what the output adds; none
// without one; refused under expert TP), then the routed rows' combined output added to it and the residual.
std::vector<OpId> moe_forward_shared(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const MoeForward& f);
ModuleInput moe_forward_output(ProgramBuilder& b, const LayerContext& ctx, const MoeForward& f,
                               std::vector<OpId> shared);
// The backward in the same three stages, for two-batch overlap in training: the combine's (the shared expert's
// backward, the un-permutation's, the combine all-to-all's), the experts' (their grouped GEMMs' data and weight
// gradients, the dispatch all-to-all's backward) and the dispatch's (the permutation's, the router's, the norm's).
struct MoeBackward {
  MoeShape shape;
  const SavedModule* saved = nullptr;
  ModuleInput grad;
  std::vector<OpId> d_normed_shared;  // the normed rows' gradient through the shared expert
  OpId d_copies = 0, d_returned = 0, d_received = 0;
};
MoeBackward moe_backward_combine(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const SavedModule& saved,
                                 const ModuleInput& grad);
void moe_backward_experts(ProgramBuilder& b, MoeBackward& m);
ModuleInput moe_backward_dispatch(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, MoeBackward& m);
ModuleInput moe_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const SavedModule& saved,
                         const ModuleInput& grad);

}  // namespace tpsim::model
