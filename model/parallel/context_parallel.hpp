// Context parallelism (parallelism.cp): each sequence split over cp GPUs with the causal load balance of the zig-zag
// split (2 cp chunks, rank r holding chunks r and 2 cp - 1 - r), and the attention's K/V exchange as Megatron-LM and
// Transformer Engine run it (cp_comm_type). Ignores padding, packed sequences (thd) and the hierarchical a2a+p2p.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/enum_names.hpp"

namespace tpsim::model {

// Transformer Engine's cp_comm_type (transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py,
// attn_forward_func_with_cp):
// kP2p (AttnFuncWithCPAndKVP2P): ring attention; K/V passed to the next CP rank in cp - 1 steps, each step's send/recv
//   issued before the block of attention it overlaps; the backward sends K/V at its first step, K/V with the dK/dV
//   accumulated so far at the middle ones and dK/dV alone at its last (cp steps).
// kAllGather (AttnFuncWithCPAndKVAllGather): K and V all-gathered, then the local queries' attention; the backward
//   gathers them again and reduce-scatters dK and dV.
// kA2a (AttnFuncWithCPAndQKVOA2A, Ulysses): Q, K, V all-to-all from sequence shards to head shards, attention over the
//   whole sequence with heads / cp heads, the output back; the backward's all-to-alls mirror them. Needs the heads
//   (each TP rank's) divisible by cp.
// kTorchAllGather: PyTorch's own context_parallel of December 2024 (torch/distributed/tensor/experimental/
//   _attention.py, TorchTitan's default "allgather" rotation): K and V (as SDPA receives them, repeated to the query
//   heads by the Llama code) all-gathered once beside the first of cp SDPA calls on chunks, each block's output and
//   log-sum-exp merged in fp32 by eager elementwise kernels; the backward gathers K/V again, runs cp SDPA backward
//   calls, accumulates dQ/dK/dV in fp32 and passes the fp32 dK/dV to the next rank after every call
//   (model/layers/context_parallel_attention.cpp).
enum class CpCommType { kP2p, kAllGather, kA2a, kTorchAllGather };
// parallelism.cp_comm_type's values, the default first.
inline constexpr EnumName<CpCommType> kCpCommTypeNames[] = {
    {CpCommType::kP2p, "p2p"},
    {CpCommType::kAllGather, "all_gather"},
    {CpCommType::kA2a, "a2a"},
    {CpCommType::kTorchAllGather, "torch_all_gather"},
};
std::string to_string(CpCommType type);

struct ContextParallel {
  int degree = 1;  // parallelism.cp
  CpCommType comm = CpCommType::kP2p;
  int member_stride = 1;  // GPUs between a rank and the same rank of the next CP member (the TP group's size)

  bool enabled() const { return degree > 1; }

  bool operator==(const ContextParallel&) const = default;  // every field (a memo's key)
};

// Bytes of the exchange buffers a CP rank holds at once beside its activations, for `tokens` local tokens (batch x
// seq_len / cp) of `q_heads` query and `kv_heads` K/V heads of `head_dim` in bf16: p2p, the backward's send and receive
// buffers of K/V and dK/dV (4 blocks of the rank's K/V; TE's p2p_comm_buffers); all_gather, the gathered K/V and their
// gradients before the reduce-scatter (2 cp blocks); a2a, Q, K and V in the heads' layout; torch_all_gather, none held
// (its buffers live while the layer's attention runs: context_parallel_attention_transient_bytes).
double context_parallel_buffer_bytes(const ContextParallel& cp, double tokens, double q_heads, double kv_heads,
                                     double head_dim);

// Bytes torch_all_gather adds to the layer's attention while its backward runs, freed when it ends, for the same sizes
// (`kv_heads` as SDPA receives them: the query heads where the model repeats K/V): the gathered K/V of the whole
// sequence (cp blocks of the rank's, bf16), the fp32 dQ, dK and dV accumulated, the fp32 dK/dV concatenated to send and
// those received, and the block's bf16 dQ, dK, dV; 0 for the other comm types.
double context_parallel_attention_transient_bytes(const ContextParallel& cp, double tokens, double q_heads,
                                                  double kv_heads, double head_dim);

// The zig-zag chunks CP rank `rank` of `cp` holds (Megatron's get_batch_on_this_cp_rank, TE's DualChunkSwap):
// {rank, 2 cp - 1 - rank}, each of seq_len / (2 cp) tokens.
std::vector<int> zigzag_chunks(int cp, int rank);

// Query-key pairs of causal attention rank `rank`'s queries compute against the K/V held by rank (rank - step) mod cp,
// for sequences of `seq_len` tokens split zig-zag (a chunk against an earlier chunk: c^2 pairs; against itself:
// c^2 / 2, the convention of attention_core's q^2 / 2). Its FLOPs are 4 x heads x head_dim per pair per sequence.
double zigzag_pairs(int64_t seq_len, int cp, int rank, int step);

// The same for a contiguous split (rank r holding tokens [r S / cp, (r + 1) S / cp)): the unbalanced split the zig-zag
// replaces, for comparison.
double contiguous_pairs(int64_t seq_len, int cp, int rank, int step);

}  // namespace tpsim::model
