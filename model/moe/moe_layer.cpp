// Op sequences of the MoE FFN module, forward and backward, with FLOP and byte counts.
#include "model/moe/moe_layer.hpp"

#include <optional>

#include "base/input_error.hpp"
#include "model/moe/moe_routing.hpp"

namespace tpsim::model {
namespace {

// Index bytes of a token's expert choice (int32), and of the router's weights (fp32, as Megatron keeps probs).
constexpr double kIndexBytes = 4.0;
// A DeepEP low-latency dispatch message: the fp8 row, one fp32 scale per 128 of its values and an int4 header
// (deepseek-ai/DeepEP csrc/kernels/internode_ll.cu: num_bytes_per_msg = sizeof(int4) + hidden + hidden / 128 x 4).
constexpr double kDeepEpScaleBlock = 128.0;
constexpr double kDeepEpHeaderBytes = 16.0;

// Which way an all-to-all moves the copies: to their experts, or back.
enum class Exchange { kDispatch, kCombine };

MoeShape moe_shape(const ProgramBuilder& b, const LayerContext& ctx, const TpStrategy& tp) {
  const MoeSpec& moe = ctx.arch.moe;
  const ExpertParallel& ep = ctx.workload.expert_parallel;
  MoeShape s;
  s.tokens = ctx.shard.expert_tp ? ctx.tokens : ctx.local_tokens;
  s.copies = s.tokens * moe.experts_per_token;
  s.etp = ep.slices();
  // Under expert TP inside the group, each slice's GPUs gather what the others received: its experts compute the
  // copies of etp x the tokens each member of the all-to-all routes.
  const LayerRouting routing = route_layer(moe, ep, s.tokens * s.etp, b.model_layer());
  s.rows = routing.busiest_rows();
  s.mean_rows = routing.mean_copies;
  s.ep = ep.degree;
  s.local_experts = moe.experts / ep.degree;
  s.active_experts = routing.busiest_groups();
  s.all_to_all = ep.degree > 1 && tp.communicates();
  s.deepep = ep.dispatcher == Dispatcher::kDeepEp;
  s.low_latency = runs_low_latency(ep, ctx.workload.is_inference(), ctx.pass.new_tokens);
  s.received_tokens = routing.busiest_received_tokens;
  s.destination_nodes = routing.destination_nodes;
  s.spans_nodes = ep.node_gpus > 0 && ep.degree * s.etp > ep.node_gpus;
  // The share of the group's GPUs on other nodes: where a balanced GPU's copies come from across the network.
  s.remote_fraction = s.spans_nodes ? 1.0 - static_cast<double>(ep.node_gpus) / static_cast<double>(ep.degree) : 0.0;
  s.sorts = s.all_to_all && s.local_experts > 1 && !s.low_latency;
  s.hidden = ctx.arch.hidden;
  s.ffn = ctx.shard.expert_ffn;
  s.elem = b.elem_bytes();
  return s;
}

ColumnLinear router_linear(const LayerContext& ctx) {
  return {"moe.norm", "moe.router", ctx.arch.moe.experts};
}

// The experts' grouped GEMMs: every local expert's problem in one kernel.
GemmShape gate_up_shape(const MoeShape& s) {
  return GemmShape{s.rows, 2 * s.ffn, s.hidden, s.active_experts};
}
GemmShape down_shape(const MoeShape& s) {
  return GemmShape{s.rows, s.hidden, s.ffn, s.active_experts};
}

double bytes_of(int64_t rows, int64_t cols, double elem) {
  return static_cast<double>(rows * cols) * elem;
}

// A grouped GEMM whose model FLOPs are the mean GPU's share of it (its kernel runs the busiest GPU's rows).
OpId expert_gemm(ProgramBuilder& b, const MoeShape& s, const std::string& name, GemmShape shape,
                 const std::vector<OpId>& deps) {
  const OpId id = b.gemm(name, shape, deps);
  if (s.rows > 0) b.set_model_flops(id, gemm_flops(shape) * s.mean_rows / static_cast<double>(s.rows));
  return id;
}

// The copies' all-to-all over the expert-parallel group: the busiest GPU's rows, 1/ep of them from (or to)
// each member.
OpId exchange_copies(ProgramBuilder& b, const MoeShape& s, const std::string& name, Exchange way,
                     const std::vector<OpId>& deps) {
  if (s.low_latency) {
    // DeepEP's low-latency kernels: the busiest GPU's copies, each its own message (the fp8 row with its scales and
    // header on dispatch, the bf16 output on combine), those from other nodes over the NIC.
    const bool dispatch = way == Exchange::kDispatch;
    const auto hidden = static_cast<double>(s.hidden);
    const double message = dispatch ? hidden * kFp8Bytes + hidden / kDeepEpScaleBlock * kFp32Bytes + kDeepEpHeaderBytes
                                    : hidden * kBf16Bytes;
    const double received = static_cast<double>(s.rows) * message;
    return b.deepep_all_to_all(
        name, dispatch ? CollectiveAlgorithm::kDeepEpLowLatencyDispatch : CollectiveAlgorithm::kDeepEpLowLatencyCombine,
        received, received * s.remote_fraction, s.ep, shape_text(s.rows, s.hidden), deps);
  }
  if (s.deepep) {
    // DeepEP: one message per token and destination GPU (received whole), across nodes one per destination node.
    const double row = static_cast<double>(s.hidden) * s.elem;
    const double network = s.spans_nodes ? static_cast<double>(s.tokens) * s.destination_nodes * row : 0.0;
    return b.deepep_all_to_all(name, CollectiveAlgorithm::kDeepEp, s.received_tokens * row, network, s.ep,
                               shape_text(s.rows, s.hidden), deps);
  }
  // Under expert TP inside the group, between the GPUs of the same slice (etp apart), each its share of the rows.
  const int64_t rows = (s.rows + s.etp - 1) / s.etp;
  return b.expert_collective(name, CollectiveKind::kAllToAll, bytes_of(rows, s.hidden, s.elem), s.ep,
                             shape_text(rows, s.hidden), deps, s.etp);
}

// Expert TP inside the group: the slice's GPUs gather the copies each received (and, after the experts, reduce-scatter
// their partial outputs back); the backward swaps the two.
OpId gather_slice_rows(ProgramBuilder& b, const MoeShape& s, const std::string& name, OpId input) {
  if (s.etp == 1 || !s.all_to_all) return input;
  return b.expert_collective(name, CollectiveKind::kAllGather, bytes_of(s.rows, s.hidden, s.elem), s.etp,
                             shape_text(s.rows, s.hidden), {input});
}
OpId scatter_slice_rows(ProgramBuilder& b, const MoeShape& s, const std::string& name, OpId input) {
  if (s.etp == 1 || !s.all_to_all) return input;
  return b.expert_collective(name, CollectiveKind::kReduceScatter, bytes_of(s.rows, s.hidden, s.elem), s.etp,
                             shape_text(s.rows, s.hidden), {input});
}

// Received copies regrouped by local expert (Megatron's sort_chunks_by_idxs), or back by source.
OpId sort_copies(ProgramBuilder& b, const MoeShape& s, const std::string& name, OpId input) {
  if (!s.sorts) return input;
  const double bytes = bytes_of(s.rows, s.hidden, s.elem);
  return b.memory(name, bytes, bytes, 0, shape_text(s.rows, s.hidden), {input});
}

// The shared expert's TP-sharded SwiGLU over the router's normed rows (gathered as the mode gathers), and the
// sigmoid gate of each token that scales its output: a [hidden] -> 1 projection on the rank's rows.
ColumnLinear shared_gate_up(const LayerContext& ctx, std::optional<OpId> normed) {
  ColumnLinear linear{"moe.norm", "moe.shared_expert.gate_up_proj", 2 * ctx.shard.shared_expert_ffn};
  linear.normed = normed;
  return linear;
}
RowLinear shared_down(const LayerContext& ctx) {
  return {"moe.shared_expert", "moe.shared_expert.down_proj", ctx.shard.shared_expert_ffn};
}
OpId shared_gate(ProgramBuilder& b, const MoeShape& s, const std::vector<OpId>& normed) {
  return b.memory("moe.shared_expert.gate", bytes_of(s.tokens, s.hidden, s.elem) + bytes_of(1, s.hidden, s.elem),
                  bytes_of(s.tokens, 1, s.elem), 2.0 * static_cast<double>(s.tokens * s.hidden),
                  shape_text(s.tokens, 1), normed);
}
// The gate where the model gates its shared expert (Qwen's; DeepSeek's adds the shared output as it is).
std::vector<OpId> gate_of_shared(ProgramBuilder& b, const LayerContext& ctx, const MoeShape& s,
                                 const std::vector<OpId>& normed) {
  if (!ctx.arch.moe.shared_expert_gated) return {};
  return {shared_gate(b, s, normed)};
}
OpId shared_swiglu(ProgramBuilder& b, const LayerContext& ctx, const MoeShape& s, const std::vector<OpId>& gate_up) {
  const int64_t ffn = ctx.shard.shared_expert_ffn, t = ctx.tokens;
  return b.memory("moe.shared_expert.swiglu", bytes_of(t, 2 * ffn, s.elem), bytes_of(t, ffn, s.elem),
                  4.0 * static_cast<double>(t * ffn), shape_text(t, ffn), gate_up);
}
// SwiGLU's backward (reads gate, up and the incoming gradient `d_act`), and the gate's (the gradient's dot with each
// row's shared output, back through the sigmoid to the rows and the gate's weight: reads the gradient `d_out` and the
// normed rows, writes the rows' gradient).
OpId shared_swiglu_backward(ProgramBuilder& b, const LayerContext& ctx, const MoeShape& s, std::vector<OpId> d_act,
                            const SavedModule& saved) {
  const int64_t ffn = ctx.shard.shared_expert_ffn, t = ctx.tokens;
  d_act.insert(d_act.end(), saved.shared.column_output.begin(), saved.shared.column_output.end());
  return b.memory("moe.shared_expert.swiglu.backward", bytes_of(t, 3 * ffn, s.elem), bytes_of(t, 2 * ffn, s.elem),
                  8.0 * static_cast<double>(t * ffn), shape_text(t, 2 * ffn), d_act);
}
OpId shared_gate_backward(ProgramBuilder& b, const MoeShape& s, std::vector<OpId> d_out, const SavedModule& saved) {
  d_out.insert(d_out.end(), {saved.shared.inner.at(1), saved.column_input.at(0)});
  return b.memory("moe.shared_expert.gate.backward", 2.0 * bytes_of(s.tokens, s.hidden, s.elem),
                  bytes_of(s.tokens, s.hidden, s.elem) + bytes_of(1, s.hidden, s.elem),
                  4.0 * static_cast<double>(s.tokens * s.hidden), shape_text(s.tokens, s.hidden), d_out);
}

// The shared expert beside the routed ones, added to their combined output: returns what the residual add reads
// (the sum and the gate scaling the shared part) and records in `saved` (may be null) what its backward reads.
std::vector<OpId> shared_expert_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const MoeShape& s,
                                        OpId normed, OpId routed, SavedModule* saved) {
  const std::vector<OpId> gate = gate_of_shared(b, ctx, s, {normed});
  const ColumnOutput gate_up = tp.column_forward(b, ctx, shared_gate_up(ctx, normed), ModuleInput{normed});
  const OpId act = shared_swiglu(b, ctx, s, gate_up.output);
  // The shared output (its gate's sigmoid applied as it is read) added to the routed one.
  const ModuleInput sum = tp.row_forward(b, ctx, shared_down(ctx), {act}, ModuleInput{routed});
  if (saved) saved->shared = SavedShared{gate_up.gemm_input, gate_up.output, joined({act}, gate)};
  return joined({*sum.ready}, gate);
}

// The shared expert's backward: its down and gate/up linears as the mode runs them, SwiGLU's and the gate's
// backward. Returns the ops whose outputs sum to the gradient of the normed rows through the shared expert.
std::vector<OpId> shared_expert_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const MoeShape& s,
                                         const SavedModule& saved, const ModuleInput& grad) {
  const std::vector<OpId> d_act = tp.row_backward(b, ctx, shared_down(ctx), grad, {saved.shared.inner.at(0)});
  const OpId d_gate_up = shared_swiglu_backward(b, ctx, s, d_act, saved);
  std::vector<OpId> d_normed =
      tp.column_input_gradient(b, ctx, shared_gate_up(ctx, std::nullopt), {d_gate_up}, saved.shared.column_input);
  if (ctx.arch.moe.shared_expert_gated) d_normed.push_back(shared_gate_backward(b, s, grad.deps(), saved));
  return d_normed;
}

// Expert TP: the shared expert's slice on every token (the rows the router read, already gathered), its partial sum
// added to the routed experts' before their one reduction, as vLLM adds them.
GemmShape sliced_shared_gate_up(const LayerContext& ctx, const MoeShape& s) {
  return GemmShape{s.tokens, 2 * ctx.shard.shared_expert_ffn, s.hidden};
}
GemmShape sliced_shared_down(const LayerContext& ctx, const MoeShape& s) {
  return GemmShape{s.tokens, s.hidden, ctx.shard.shared_expert_ffn};
}
OpId sliced_shared_expert_forward(ProgramBuilder& b, const LayerContext& ctx, const MoeShape& s,
                                  const std::vector<OpId>& normed, OpId routed, SavedModule* saved) {
  const std::vector<OpId> gate = gate_of_shared(b, ctx, s, normed);
  const OpId gate_up = b.gemm("moe.shared_expert.gate_up_proj", sliced_shared_gate_up(ctx, s), normed);
  const OpId act = shared_swiglu(b, ctx, s, {gate_up});
  const OpId down = b.gemm("moe.shared_expert.down_proj", sliced_shared_down(ctx, s), {act});
  if (saved) saved->shared = SavedShared{normed, {gate_up}, joined({act}, gate)};
  return residual_add(b, "moe.shared_expert.residual", s.tokens, s.hidden, joined({down}, gate), routed);
}
std::vector<OpId> sliced_shared_expert_backward(ProgramBuilder& b, const LayerContext& ctx, const MoeShape& s,
                                                const SavedModule& saved, const std::vector<OpId>& d_out) {
  const GemmShape down = sliced_shared_down(ctx, s), gate_up = sliced_shared_gate_up(ctx, s);
  const OpId d_act = b.gemm("moe.shared_expert.down_proj.dgrad", data_gradient_shape(down), d_out);
  weight_gradient(b, "moe.shared_expert.down_proj", down, d_out, {saved.shared.inner.at(0)});
  const OpId d_gate_up = shared_swiglu_backward(b, ctx, s, {d_act}, saved);
  const OpId d_normed = b.gemm("moe.shared_expert.gate_up_proj.dgrad", data_gradient_shape(gate_up), {d_gate_up});
  weight_gradient(b, "moe.shared_expert.gate_up_proj", gate_up, {d_gate_up}, saved.shared.column_input);
  if (!ctx.arch.moe.shared_expert_gated) return {d_normed};
  return {d_normed, shared_gate_backward(b, s, d_out, saved)};
}

}  // namespace

MoeForward moe_forward_dispatch(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const ModuleInput& input) {
  const bool sliced = ctx.shard.expert_tp;
  if (ctx.shard.tp > 1 && !ctx.sequence_sharded && !sliced) {
    throw InputError(
        "an MoE layer under tp > 1 with expert parallelism needs a sequence-sharded mode (sp or async, or nocomm "
        "with a pass's tokens divisible by tp): each rank routes its own rows, as Megatron requires "
        "--sequence-parallel with MoE");
  }
  MoeForward f;
  f.input = input;
  f.shape = moe_shape(b, ctx, tp);
  const MoeShape& s = f.shape;
  const int64_t experts = ctx.arch.moe.experts;
  const ColumnLinear router = router_linear(ctx);
  // The router's input rows and logits: the rank's own rows, or under expert TP every row of the pass (gathered as
  // the mode gathers a column-parallel linear's input; the router is replicated).
  std::vector<OpId> logits;
  if (sliced) {
    const ColumnOutput routed = tp.column_forward(b, ctx, router, input);
    f.normed = routed.gemm_input;
    logits = routed.output;
  } else {
    f.normed = {norm_of(b, ctx, router, input)};
    logits = {b.gemm(router.gemm_name, GemmShape{s.tokens, experts, s.hidden}, f.normed)};
  }
  // Softmax over the experts and the top-k: reads the logits, writes each token's k weights and expert indices.
  // FLOPs (informative: a memory-bound kernel's time is its bytes): about 5 per logit, the softmax's max, exp,
  // sum and divide and the top-k's comparison.
  f.top_k = b.memory("moe.top_k", bytes_of(s.tokens, experts, s.elem),
                     static_cast<double>(s.copies) * (kFp32Bytes + kIndexBytes),
                     5.0 * static_cast<double>(s.tokens * experts), shape_text(s.tokens, experts), logits);
  std::vector<OpId> permute_reads = f.normed;
  permute_reads.push_back(f.top_k);
  if (s.low_latency && s.all_to_all) {  // the kernel reads each row once and writes its copies to their experts
    f.received = exchange_copies(b, s, "moe.dispatch", Exchange::kDispatch, permute_reads);
    return f;
  }
  const OpId permuted =
      b.memory("moe.permute", bytes_of(s.tokens, s.hidden, s.elem) + static_cast<double>(s.copies) * kIndexBytes,
               bytes_of(s.copies, s.hidden, s.elem), 0, shape_text(s.copies, s.hidden), permute_reads);
  f.received = s.all_to_all ? exchange_copies(b, s, "moe.dispatch", Exchange::kDispatch, {permuted}) : permuted;
  return f;
}

void moe_forward_experts(ProgramBuilder& b, MoeForward& f) {
  const MoeShape& s = f.shape;
  f.received = sort_copies(b, s, "moe.sort", gather_slice_rows(b, s, "moe.etp.all_gather", f.received));
  f.gate_up = expert_gemm(b, s, "moe.experts.gate_up_proj", gate_up_shape(s), {f.received});
  f.act = b.memory("moe.experts.swiglu", bytes_of(s.rows, 2 * s.ffn, s.elem), bytes_of(s.rows, s.ffn, s.elem),
                   4.0 * static_cast<double>(s.rows * s.ffn), shape_text(s.rows, s.ffn), {f.gate_up});
  const OpId down = expert_gemm(b, s, "moe.experts.down_proj", down_shape(s), {f.act});
  f.returned = scatter_slice_rows(b, s, "moe.etp.reduce_scatter", sort_copies(b, s, "moe.unsort", down));
  if (s.all_to_all) f.returned = exchange_copies(b, s, "moe.combine", Exchange::kCombine, {f.returned});
}

namespace {

// Each token's copies summed by the router's weights (inside DeepEP's low-latency combine kernel).
OpId combined_rows(ProgramBuilder& b, const MoeForward& f) {
  const MoeShape& s = f.shape;
  if (s.low_latency && s.all_to_all) return f.returned;
  return b.memory("moe.unpermute", bytes_of(s.copies, s.hidden, s.elem) + static_cast<double>(s.copies) * kFp32Bytes,
                  bytes_of(s.tokens, s.hidden, s.elem), 2.0 * static_cast<double>(s.copies * s.hidden),
                  shape_text(s.tokens, s.hidden), {f.returned, f.top_k});
}

}  // namespace

std::vector<OpId> moe_forward_shared(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const MoeForward& f) {
  if (ctx.shard.expert_tp) throw InputError("moe_forward_shared: the shared expert of expert-TP slices is not split");
  if (ctx.shard.shared_expert_ffn == 0) return {};
  // Its output add reads the routed rows' top-k in place of their combined output, which SGLang adds into it after
  // (op_output): the same kernels, issued before the routed rows are back.
  return shared_expert_forward(b, ctx, tp, f.shape, f.normed.front(), f.top_k, nullptr);
}

ModuleInput moe_forward_output(ProgramBuilder& b, const LayerContext& ctx, const MoeForward& f,
                               std::vector<OpId> shared) {
  shared.push_back(combined_rows(b, f));
  return residual_stream(b, ctx, "moe.residual", shared, f.input.ready);
}

ModuleInput moe_forward_combine(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const MoeForward& f,
                                SavedModule* saved) {
  const MoeShape& s = f.shape;
  const OpId combined = combined_rows(b, f);
  if (saved) *saved = SavedModule{f.input, f.normed, {f.gate_up}, {f.top_k, f.received, f.returned}, {f.act}, {}};
  const bool shared = ctx.shard.shared_expert_ffn > 0;
  if (ctx.shard.expert_tp) {
    // Every rank's partial sums (its slices of every expert) reduced as the mode reduces, then the residual add.
    const OpId partial = shared ? sliced_shared_expert_forward(b, ctx, s, f.normed, combined, saved) : combined;
    const ModuleInput reduced = tp.reduce_partial(b, ctx, "moe.experts", partial);
    return residual_stream(b, ctx, "moe.residual", reduced.deps(), f.input.ready);
  }
  std::vector<OpId> summed{combined};
  if (shared) summed = shared_expert_forward(b, ctx, tp, s, f.normed.front(), combined, saved);
  return residual_stream(b, ctx, "moe.residual", summed, f.input.ready);
}

ModuleInput moe_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const ModuleInput& input,
                        SavedModule* saved) {
  MoeForward f = moe_forward_dispatch(b, ctx, tp, input);
  moe_forward_experts(b, f);
  return moe_forward_combine(b, ctx, tp, f, saved);
}

MoeBackward moe_backward_combine(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const SavedModule& saved,
                                 const ModuleInput& grad) {
  MoeBackward m;
  m.saved = &saved;
  m.grad = grad;
  m.shape = moe_shape(b, ctx, tp);
  const MoeShape& s = m.shape;
  const bool sliced = ctx.shard.expert_tp;
  // The gradient of the routed output: the stream's rows, or under expert TP every row (gathered as the mode
  // gathers the gradient of a reduced partial sum).
  const std::vector<OpId> d_out =
      sliced ? std::vector<OpId>{tp.gather_gradient(b, ctx, "moe.experts.backward", grad)} : grad.deps();
  // The shared expert ran last: its backward first, down to the gradient of the normed rows through it.
  if (ctx.shard.shared_expert_ffn > 0) {
    m.d_normed_shared = sliced ? sliced_shared_expert_backward(b, ctx, s, saved, d_out)
                               : shared_expert_backward(b, ctx, tp, s, saved, grad);
  }
  const OpId top_k = saved.inner.at(0), returned = saved.inner.at(2);
  // The copies' gradients (the token's gradient times each weight), and the weights' (its dot with each copy).
  std::vector<OpId> unpermute_reads = d_out;
  unpermute_reads.insert(unpermute_reads.end(), {returned, top_k});
  m.d_copies =
      b.memory("moe.unpermute.backward", bytes_of(s.tokens, s.hidden, s.elem) + bytes_of(s.copies, s.hidden, s.elem),
               bytes_of(s.copies, s.hidden, s.elem) + static_cast<double>(s.copies) * kFp32Bytes,
               4.0 * static_cast<double>(s.copies * s.hidden), shape_text(s.copies, s.hidden), unpermute_reads);
  m.d_returned =
      s.all_to_all ? exchange_copies(b, s, "moe.combine.backward", Exchange::kDispatch, {m.d_copies}) : m.d_copies;
  return m;
}

void moe_backward_experts(ProgramBuilder& b, MoeBackward& m) {
  const MoeShape& s = m.shape;
  const SavedModule& saved = *m.saved;
  const OpId received = saved.inner.at(1);
  const OpId d_down_out = sort_copies(b, s, "moe.unsort.backward",
                                      gather_slice_rows(b, s, "moe.etp.reduce_scatter.backward", m.d_returned));
  const GemmShape down = down_shape(s);
  const OpId d_act = expert_gemm(b, s, "moe.experts.down_proj.dgrad", data_gradient_shape(down), {d_down_out});
  expert_gemm(b, s, "moe.experts.down_proj.wgrad", weight_gradient_shape(down), {d_down_out, saved.row_input.at(0)});
  const OpId d_gate_up = b.memory("moe.experts.swiglu.backward", bytes_of(s.rows, 3 * s.ffn, s.elem),
                                  bytes_of(s.rows, 2 * s.ffn, s.elem), 8.0 * static_cast<double>(s.rows * s.ffn),
                                  shape_text(s.rows, 2 * s.ffn), {d_act, saved.column_output.at(0)});
  const GemmShape gate_up = gate_up_shape(s);
  OpId d_received = expert_gemm(b, s, "moe.experts.gate_up_proj.dgrad", data_gradient_shape(gate_up), {d_gate_up});
  expert_gemm(b, s, "moe.experts.gate_up_proj.wgrad", weight_gradient_shape(gate_up), {d_gate_up, received});
  d_received =
      scatter_slice_rows(b, s, "moe.etp.all_gather.backward", sort_copies(b, s, "moe.sort.backward", d_received));
  m.d_received =
      s.all_to_all ? exchange_copies(b, s, "moe.dispatch.backward", Exchange::kCombine, {d_received}) : d_received;
}

ModuleInput moe_backward_dispatch(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, MoeBackward& m) {
  const MoeShape& s = m.shape;
  const SavedModule& saved = *m.saved;
  const bool sliced = ctx.shard.expert_tp;
  const int64_t experts = ctx.arch.moe.experts;
  const OpId top_k = saved.inner.at(0);
  // Each token's copies' gradients summed back into its row.
  const OpId d_normed =
      b.memory("moe.permute.backward", bytes_of(s.copies, s.hidden, s.elem), bytes_of(s.tokens, s.hidden, s.elem),
               static_cast<double>(s.copies * s.hidden), shape_text(s.tokens, s.hidden), {m.d_received});
  // The router: softmax and top-k backward to the logits' gradient (FLOPs as the forward's, informative), then its two
  // GEMMs (the data gradient adds into the permutation's, beta = 1).
  const OpId d_logits =
      b.memory("moe.top_k.backward", bytes_of(s.tokens, experts, s.elem) + static_cast<double>(s.copies) * kFp32Bytes,
               bytes_of(s.tokens, experts, s.elem), 5.0 * static_cast<double>(s.tokens * experts),
               shape_text(s.tokens, experts), {m.d_copies, top_k});
  const ColumnLinear router = router_linear(ctx);
  if (sliced) {
    // Every rank's partial input gradient (its slices' and its share of the router's) reduced as the mode reduces
    // a column-parallel linear's, with the router's data gradient adding into it.
    std::vector<OpId> partials{d_logits, d_normed};
    partials.insert(partials.end(), m.d_normed_shared.begin(), m.d_normed_shared.end());
    const std::vector<OpId> reduced = tp.column_input_gradient(b, ctx, router, partials, saved.column_input);
    return module_input_gradient(b, ctx, router, reduced, saved.input, "moe", m.grad);
  }
  const GemmShape router_shape{s.tokens, experts, s.hidden};
  const OpId d_router = b.gemm("moe.router.dgrad", data_gradient_shape(router_shape), {d_logits, d_normed});
  weight_gradient(b, router.gemm_name, router_shape, {d_logits}, saved.column_input);
  std::vector<OpId> d_normed_all = m.d_normed_shared;
  d_normed_all.push_back(d_router);
  return module_input_gradient(b, ctx, router, d_normed_all, saved.input, "moe", m.grad);
}

ModuleInput moe_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const SavedModule& saved,
                         const ModuleInput& grad) {
  MoeBackward m = moe_backward_combine(b, ctx, tp, saved, grad);
  moe_backward_experts(b, m);
  return moe_backward_dispatch(b, ctx, tp, m);
}

}  // namespace tpsim::model
