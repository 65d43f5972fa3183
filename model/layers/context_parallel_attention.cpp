// Context-parallel attention blocks and their K/V exchanges, per cp_comm_type, as Transformer Engine runs them
// (transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py) and as PyTorch's context_parallel
// does (torch_all_gather).
#include "model/layers/context_parallel_attention.hpp"

#include <optional>
#include <string>

#include "model/layers/layer_ops.hpp"
#include "model/parallel/context_parallel.hpp"

namespace tpsim::model {
namespace {

// One rank's view of the attention: b sequences of q = seq_len / cp local queries, hq query and hkv K/V heads of d.
struct CpDims {
  double batch, q, hq, hkv, d;
  int64_t seq_len;
  int cp;
  explicit CpDims(const LayerContext& ctx)
      : batch(static_cast<double>(ctx.pass.batch)),
        q(static_cast<double>(ctx.pass.new_tokens)),
        hq(static_cast<double>(ctx.shard.q_heads)),
        hkv(static_cast<double>(repeats_kv(ctx) ? ctx.shard.q_heads : ctx.shard.kv_heads)),
        d(static_cast<double>(ctx.arch.head_dim)),
        seq_len(ctx.pass.new_tokens * ctx.workload.context_parallel.degree),
        cp(ctx.workload.context_parallel.degree) {}
  // FLOPs of one query-key pair over every sequence and head (attention_core's 4 b hq d per pair).
  double flops_per_pair() const { return 4.0 * batch * hq * d; }
  // The rank's query-key pairs over the whole sequence: causal pairs / cp, whatever the split's steps.
  double pairs() const {
    double total = 0;
    for (int step = 0; step < cp; ++step) total += zigzag_pairs(seq_len, cp, 0, step);
    return total;
  }
  // The causal diagonal of the rank's whole attention (Op::causal_inverse_length): its q local queries' rows over
  // twice its pairs, 1 / seq_len (as for Ulysses' whole sequence of 1/cp of the heads).
  double causal_inverse_length() const { return q / (2.0 * pairs()); }
  // The same for ring step `step` of rank `rank`: its own chunks (step 0) hold the diagonal, the others none.
  double step_causal_inverse_length(int rank, int step) const {
    return step == 0 ? q / (2.0 * zigzag_pairs(seq_len, cp, rank, 0)) : 0.0;
  }
};

DataParallel cp_group(const LayerContext& ctx) {
  DataParallel group;
  group.degree = ctx.workload.context_parallel.degree;
  group.member_stride = ctx.workload.context_parallel.member_stride;
  return group;
}

std::string cp_shape(const CpDims& a, int step) {
  return "b=" + std::to_string(static_cast<int64_t>(a.batch)) + " local=" + std::to_string(static_cast<int64_t>(a.q)) +
         " seq=" + std::to_string(a.seq_len) + " cp=" + std::to_string(a.cp) + " step=" + std::to_string(step);
}

OpId exchange_kv(ProgramBuilder& b, const LayerContext& ctx, const std::string& name, CollectiveKind kind, double bytes,
                 const std::string& shape, const std::vector<OpId>& deps) {
  return b.data_collective(name, kind, bytes, cp_group(ctx), kContextParallelStream, shape, deps);
}

// Ring attention's forward (AttnFuncWithCPAndKVP2P.forward): at step i the K/V received at step i - 1 are sent on to
// the next rank (i < cp - 1) while block i, the local queries against rank (r - i)'s K/V, runs.
OpId ring_forward(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& input) {
  const CpDims a(ctx);
  const double qkv = b.attention_fp8() ? kFp8Bytes : b.elem_bytes();
  const double kv = context_parallel_kv_bytes(ctx, qkv);
  const double queries = a.batch * a.q * a.hq * a.d * qkv, output = a.batch * a.q * a.hq * a.d * b.elem_bytes();
  std::optional<OpId> received, block;
  for (int step = 0; step < a.cp; ++step) {
    const std::vector<OpId> kv_ready = received ? joined(input, {*received}) : input;
    std::optional<OpId> sent;
    if (step < a.cp - 1) {
      sent = exchange_kv(b, ctx, "attn.cp.kv.step" + std::to_string(step), CollectiveKind::kSendRecv, kv,
                         cp_shape(a, step), received ? std::vector<OpId>{*received} : input);
    }
    block =
        b.attention("attn.core.cp" + std::to_string(step), a.flops_per_pair() * zigzag_pairs(a.seq_len, a.cp, 0, step),
                    a.step_causal_inverse_length(0, step), queries + kv, output, output, cp_shape(a, step), kv_ready);
    received = sent;
  }
  return *block;
}

// Ring attention's backward (AttnFuncWithCPAndKVP2P.backward): cp steps; step 0 sends K/V, the middle ones K/V with
// the dK/dV accumulated so far (block i - 1's), the last dK/dV alone, each beside block i's backward; the dK/dV that
// arrive last are added to the rank's own.
OpId ring_backward(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& deps) {
  const CpDims a(ctx);
  const double kv = context_parallel_kv_bytes(ctx, b.elem_bytes());
  const double query_side = a.batch * a.q * a.hq * a.d * b.elem_bytes();  // one of Q, O, dO, dQ
  std::optional<OpId> received, block;
  for (int step = 0; step < a.cp; ++step) {
    const double bytes = step == 0 ? kv : step == a.cp - 1 ? kv : 2.0 * kv;
    std::vector<OpId> send_deps = received ? std::vector<OpId>{*received, *block} : deps;
    const OpId sent = exchange_kv(b, ctx, "attn.cp.kv_dkv.step" + std::to_string(step), CollectiveKind::kSendRecv,
                                  bytes, cp_shape(a, step), send_deps);
    const std::vector<OpId> kv_ready = received ? joined(deps, {*received}) : deps;
    block = b.attention("attn.core.cp" + std::to_string(step) + ".backward",
                        kAttentionBackwardFlopRatio * a.flops_per_pair() * zigzag_pairs(a.seq_len, a.cp, 0, step),
                        a.step_causal_inverse_length(0, step), 3.0 * query_side + kv, query_side + kv, query_side + kv,
                        cp_shape(a, step), kv_ready);
    received = sent;
  }
  return b.memory("attn.cp.dkv.add", 2.0 * kv, kv, kv / b.elem_bytes(), cp_shape(a, a.cp - 1), {*received, *block});
}

// AttnFuncWithCPAndKVAllGather: K and V gathered over the CP group, then the local queries' attention.
OpId gather_forward(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& input) {
  const CpDims a(ctx);
  const double qkv = b.attention_fp8() ? kFp8Bytes : b.elem_bytes();
  const double gathered = a.cp * context_parallel_kv_bytes(ctx, qkv);
  const double queries = a.batch * a.q * a.hq * a.d * qkv, output = a.batch * a.q * a.hq * a.d * b.elem_bytes();
  const OpId kv =
      exchange_kv(b, ctx, "attn.cp.kv.all_gather", CollectiveKind::kAllGather, gathered, cp_shape(a, 0), input);
  return b.attention("attn.core", a.flops_per_pair() * a.pairs(), a.causal_inverse_length(), queries + gathered, output,
                     output, cp_shape(a, 0), joined(input, {kv}));
}

// Its backward gathers K and V again, and reduce-scatters dK and dV to their ranks.
OpId gather_backward(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& deps) {
  const CpDims a(ctx);
  const double gathered = a.cp * context_parallel_kv_bytes(ctx, b.elem_bytes());
  const double query_side = a.batch * a.q * a.hq * a.d * b.elem_bytes();
  const OpId kv =
      exchange_kv(b, ctx, "attn.cp.kv.all_gather", CollectiveKind::kAllGather, gathered, cp_shape(a, 0), deps);
  const OpId grads = b.attention("attn.core.backward", kAttentionBackwardFlopRatio * a.flops_per_pair() * a.pairs(),
                                 a.causal_inverse_length(), 3.0 * query_side + gathered, query_side + gathered,
                                 query_side + gathered, cp_shape(a, 0), joined(deps, {kv}));
  return exchange_kv(b, ctx, "attn.cp.dkv.reduce_scatter", CollectiveKind::kReduceScatter, gathered, cp_shape(a, 0),
                     {grads});
}

// AttnFuncWithCPAndQKVOA2A (Ulysses): Q, K, V to head shards, attention over the whole sequence with 1/cp of the
// heads (the same FLOPs as the zig-zag's share), the output back to sequence shards.
OpId heads_forward(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& input) {
  const CpDims a(ctx);
  const double qkv = b.attention_fp8() ? kFp8Bytes : b.elem_bytes();
  const double tensors = a.batch * a.q * (a.hq + 2.0 * a.hkv) * a.d * qkv;
  const double output = a.batch * a.q * a.hq * a.d * b.elem_bytes();
  const OpId in =
      exchange_kv(b, ctx, "attn.cp.qkv.all_to_all", CollectiveKind::kAllToAll, tensors, cp_shape(a, 0), input);
  const OpId core = b.attention("attn.core", a.flops_per_pair() * a.pairs(), a.causal_inverse_length(), tensors, output,
                                output, cp_shape(a, 0), joined(input, {in}));
  return exchange_kv(b, ctx, "attn.cp.out.all_to_all", CollectiveKind::kAllToAll, output, cp_shape(a, 0), {core});
}

OpId heads_backward(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& deps) {
  const CpDims a(ctx);
  const double e = b.elem_bytes();
  const double query_side = a.batch * a.q * a.hq * a.d * e, kv = context_parallel_kv_bytes(ctx, e);
  const OpId d_out =
      exchange_kv(b, ctx, "attn.cp.dout.all_to_all", CollectiveKind::kAllToAll, query_side, cp_shape(a, 0), deps);
  const OpId grads = b.attention("attn.core.backward", kAttentionBackwardFlopRatio * a.flops_per_pair() * a.pairs(),
                                 a.causal_inverse_length(), 3.0 * query_side + kv, query_side + kv, query_side + kv,
                                 cp_shape(a, 0), joined(deps, {d_out}));
  return exchange_kv(b, ctx, "attn.cp.dqkv.all_to_all", CollectiveKind::kAllToAll, query_side + kv, cp_shape(a, 0),
                     {grads});
}

// PyTorch's context_parallel (torch_all_gather), as torch/distributed/tensor/experimental/_attention.py ran it in
// December 2024: _templated_ring_attention and its backward with the all-gather rotater, the round-robin (head-tail)
// load balance on (its default). The program is CP rank cp - 1's: every step after the first runs its whole local
// query against the first half of the source rank's K/V (the `i <= rank` branch), so its merges and gradient updates
// are whole-query ones, the largest of any rank. Sizes: n elements of the rank's Q (and O), n_kv of its K (and V, as
// SDPA receives them: repeated to the query heads where the Llama code repeats them), lse of its log-sum-exp.
struct TorchCpSizes {
  double n, n_kv, lse, e;
  TorchCpSizes(const CpDims& a, double elem_bytes)
      : n(a.batch * a.q * a.hq * a.d), n_kv(a.batch * a.q * a.hkv * a.d), lse(a.batch * a.q * a.hq), e(elem_bytes) {}
  double kv() const { return 2.0 * n_kv * e; }  // the rank's K and V
};

// K and V made contiguous (SDPA receives them transposed to [b, heads, s, d]), then concatenated into one buffer:
// what the rotater sends.
OpId torch_kv_buffer(ProgramBuilder& b, const TorchCpSizes& z, const std::string& shape,
                     const std::vector<OpId>& deps) {
  const OpId contiguous = b.memory("attn.cp.kv.contiguous", z.kv(), z.kv(), 0, shape, deps);
  return b.memory("attn.cp.kv.cat", z.kv(), z.kv(), 0, shape, {contiguous});
}

// _SDPAMerger.step on a block's output after the first: the block's output cast to fp32, then
// out - sigmoid(block_lse - lse) * (out - block_out) and lse - logsigmoid(lse - block_lse), each an eager kernel over
// fp32 tensors (sub, mul, sub on the output; five on the log-sum-exp). Bytes per output element: the cast reads e and
// writes 4, the first sub reads 8 and writes 4, the mul reads 4 (and the sigmoid's row) and writes 4, the last sub
// reads 8 and writes 4: e + 20 read, 16 written. Per log-sum-exp row: block_lse - lse, sigmoid, lse - block_lse,
// logsigmoid, lse - that (8/4, 4/4, 8/4, 4/4, 8/4 bytes in/out) and the mul's read of the sigmoid (4): 36 in, 20 out.
OpId torch_merge(ProgramBuilder& b, const TorchCpSizes& z, int step, const std::string& shape, OpId block) {
  const double read = (z.e + 20.0) * z.n + 36.0 * z.lse, written = 16.0 * z.n + 20.0 * z.lse;
  return b.memory("attn.cp.merge.step" + std::to_string(step), read, written, 3.0 * z.n + 5.0 * z.lse, shape, {block});
}

// _templated_ring_attention: K/V gathered once (issued before the first block, waited before the second); cp SDPA
// calls, the first causal over the local chunks, the others over the gathered chunk of rank (r - i) mod cp; a copy
// of the received chunk before each step but the last (the rotater's torch.cat, as the ring's send); the merges.
OpId torch_forward(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& input) {
  const CpDims a(ctx);
  const TorchCpSizes z(a, b.elem_bytes());
  const OpId sent = torch_kv_buffer(b, z, cp_shape(a, 0), input);
  const OpId gathered =
      exchange_kv(b, ctx, "attn.cp.kv.all_gather", CollectiveKind::kAllGather, a.cp * z.kv(), cp_shape(a, 0), {sent});
  OpId block =
      b.attention("attn.core.cp0", a.flops_per_pair() * zigzag_pairs(a.seq_len, a.cp, 0, 0),
                  a.step_causal_inverse_length(0, 0), z.n * z.e + z.kv(), z.n * z.e, z.n * z.e, cp_shape(a, 0), {sent});
  // The first block's output and log-sum-exp cast to fp32 (the merger keeps them).
  OpId merged = b.memory("attn.cp.merge.step0", z.n * z.e, 4.0 * z.n, 0, cp_shape(a, 0), {block});
  for (int step = 1; step < a.cp; ++step) {
    const std::string shape = cp_shape(a, step);
    std::vector<OpId> ready = {gathered, merged};
    if (step < a.cp - 1)
      ready = {b.memory("attn.cp.kv.cat.step" + std::to_string(step), z.kv(), z.kv(), 0, shape, ready)};
    block = b.attention("attn.core.cp" + std::to_string(step),
                        a.flops_per_pair() * zigzag_pairs(a.seq_len, a.cp, a.cp - 1, step),
                        a.step_causal_inverse_length(a.cp - 1, step), z.n * z.e + z.kv() / 2.0, z.n * z.e, z.n * z.e,
                        shape, joined(ready, {gathered}));
    merged = torch_merge(b, z, step, shape, block);
  }
  return b.memory("attn.cp.out.cast", 4.0 * z.n, z.n * z.e, 0, cp_shape(a, a.cp - 1), {merged});
}

// The fp32 gradient updates after block `step`'s backward: the first adds dQ, dK, dV into the zeroed accumulators;
// the later ones add dK/dV into the first half of those received from the previous rank (_partial_update: the chunk
// added in place, the halves concatenated again) and dQ into the rank's own; then dK and dV concatenated into the
// buffer sent on (torch.cat of the flattened fp32 tensors).
OpId torch_gradient_update(ProgramBuilder& b, const TorchCpSizes& z, int step, const std::string& shape,
                           const std::vector<OpId>& deps) {
  const double add_q = (4.0 + z.e) * z.n, add_q_written = 4.0 * z.n;
  double read = add_q + 8.0 * z.n_kv, written = add_q_written + 8.0 * z.n_kv;  // the concatenation sent on
  if (step == 0) {
    read += 2.0 * (4.0 + z.e) * z.n_kv;
    written += 8.0 * z.n_kv;
  } else {
    read += (4.0 + z.e) * z.n_kv + 8.0 * z.n_kv;  // half of dK and dV added in place, both concatenated
    written += 4.0 * z.n_kv + 8.0 * z.n_kv;
  }
  return b.memory("attn.cp.grads.step" + std::to_string(step), read, written, z.n + 2.0 * z.n_kv, shape, deps);
}

// _templated_ring_attention_backward: fp32 accumulators zeroed; K/V gathered again beside the first block's backward;
// cp SDPA backward calls on the same chunks as the forward's; after each, the fp32 dK/dV passed to the next rank
// (its dkv rotater: permute_tensor, an all-to-all with one peer), waited after the next block's backward; the last
// ones, home at last, and dQ cast to bf16.
OpId torch_backward(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& deps) {
  const CpDims a(ctx);
  const TorchCpSizes z(a, b.elem_bytes());
  const OpId zeros = b.memory("attn.cp.grads.zero", 0, 4.0 * (z.n + 2.0 * z.n_kv), 0, cp_shape(a, 0), deps);
  const OpId sent_kv = torch_kv_buffer(b, z, cp_shape(a, 0), {zeros});
  const OpId gathered = exchange_kv(b, ctx, "attn.cp.kv.all_gather", CollectiveKind::kAllGather, a.cp * z.kv(),
                                    cp_shape(a, 0), {sent_kv});
  const double query_side = z.n * z.e;  // one of Q, O, dO, dQ
  std::optional<OpId> passed, updated;
  for (int step = 0; step < a.cp; ++step) {
    const std::string shape = cp_shape(a, step);
    const double kv = step == 0 ? z.kv() : z.kv() / 2.0;  // the block's K/V (and dK/dV)
    std::vector<OpId> ready = step == 0 ? std::vector<OpId>{sent_kv} : std::vector<OpId>{gathered, *updated};
    if (step > 0 && step < a.cp - 1) {
      ready = {b.memory("attn.cp.kv.cat.step" + std::to_string(step), z.kv(), z.kv(), 0, shape, ready)};
    }
    const OpId block =
        b.attention("attn.core.cp" + std::to_string(step) + ".backward",
                    kAttentionBackwardFlopRatio * a.flops_per_pair() * zigzag_pairs(a.seq_len, a.cp, a.cp - 1, step),
                    a.step_causal_inverse_length(a.cp - 1, step), 3.0 * query_side + kv, query_side + kv,
                    query_side + kv, shape, ready);
    updated =
        torch_gradient_update(b, z, step, shape, passed ? std::vector<OpId>{block, *passed} : std::vector<OpId>{block});
    passed = exchange_kv(b, ctx, "attn.cp.dkv.step" + std::to_string(step), CollectiveKind::kSendRecv, 8.0 * z.n_kv,
                         shape, {*updated});
  }
  const OpId dq = b.memory("attn.cp.dq.cast", 4.0 * z.n, z.n * z.e, 0, cp_shape(a, a.cp - 1), {*updated});
  return b.memory("attn.cp.dkv.cast", 8.0 * z.n_kv, 2.0 * z.n_kv * z.e, 0, cp_shape(a, a.cp - 1), {dq, *passed});
}

}  // namespace

double context_parallel_kv_bytes(const LayerContext& ctx, double kv_elem_bytes) {
  const CpDims a(ctx);
  return 2.0 * a.batch * a.q * a.hkv * a.d * kv_elem_bytes;
}

OpId context_parallel_attention(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& input) {
  switch (ctx.workload.context_parallel.comm) {
    case CpCommType::kAllGather:
      return gather_forward(b, ctx, input);
    case CpCommType::kA2a:
      return heads_forward(b, ctx, input);
    case CpCommType::kTorchAllGather:
      return torch_forward(b, ctx, input);
    case CpCommType::kP2p:
      break;
  }
  return ring_forward(b, ctx, input);
}

OpId context_parallel_attention_backward(ProgramBuilder& b, const LayerContext& ctx, const std::vector<OpId>& deps) {
  switch (ctx.workload.context_parallel.comm) {
    case CpCommType::kAllGather:
      return gather_backward(b, ctx, deps);
    case CpCommType::kA2a:
      return heads_backward(b, ctx, deps);
    case CpCommType::kTorchAllGather:
      return torch_backward(b, ctx, deps);
    case CpCommType::kP2p:
      break;
  }
  return ring_backward(b, ctx, deps);
}

}  // namespace tpsim::model
