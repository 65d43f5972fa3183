// One operation of a TP rank's program: a kernel (GEMM, attention, memory-bound op) or a communication.
// Programs are rank-symmetric: peers and cross-rank dependencies are given as offsets from the rank.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/enum_names.hpp"
#include "model/graph/variant.hpp"

namespace tpsim::model {

using OpId = uint32_t;

enum class OpKind {
  kGemm,        // tensor-core matmul, cost from its shape
  kAttention,   // FlashAttention core: FLOPs from sequence length, plus bytes
  kMemory,      // memory-bound kernel (norms, RoPE, SwiGLU, residual adds, reductions)
  kCollective,  // NCCL collective over the TP group
  kExchange,    // one point-to-point step: send to rank+send_offset, receive from rank+recv_offset
};
inline constexpr EnumName<OpKind> kOpKindNames[] = {
    {OpKind::kGemm, "gemm"},         {OpKind::kAttention, "attention"},
    {OpKind::kMemory, "memory"},     {OpKind::kCollective, "collective"},
    {OpKind::kExchange, "exchange"},
};

// The CUDA stream an op is issued on; ops on one stream of one GPU run in issue order, ops on
// different streams concurrently. The TP modes use compute, comm (NCCL) and copy (copy engine); an op
// list may also put communication on more streams (stream_named: comm2, copy2, comm3, copy3, comm4),
// as several process groups or side streams do.
// kCompute2: a second compute stream (PyTorch's symmetric-memory async-TP ops alternate GEMM pieces and
// their copies between the current stream and a backend stream).
// kComm2: context parallelism's K/V exchanges (model/layers/context_parallel_attention.hpp).
// kComm3 and kComm4: the data-parallel group's collectives (FSDP's all-gathers, and the gradients' reductions).
// kCopy2 and kCopy3: only an op list's.
enum class Stream : uint8_t {
  kCompute = 0,
  kComm = 1,
  kCopy = 2,
  kComm2 = 3,
  kCopy2 = 4,
  kComm3 = 5,
  kCopy3 = 6,
  kComm4 = 7,
  kCompute2 = 8
};
inline constexpr int kStreamCount = 9;
// The op list's names of the streams (kCopy is "copy" there, printed "copy_engine").
inline constexpr EnumName<Stream> kStreamNames[] = {
    {Stream::kCompute, "compute"},
    {Stream::kComm, "comm"},
    {Stream::kCopy, "copy_engine", NameUse::kPrinted},
    {Stream::kCopy, "copy", NameUse::kRead},
    {Stream::kComm2, "comm2"},
    {Stream::kCopy2, "copy2"},
    {Stream::kComm3, "comm3"},
    {Stream::kCopy3, "copy3"},
    {Stream::kComm4, "comm4"},
    {Stream::kCompute2, "compute2"},
};

// All-to-all: every rank sends a 1/n block of its tensor to each peer; send/recv: every rank sends its
// whole tensor to the next rank (a ring shift), as nccl-tests' sendrecv_perf does.
enum class CollectiveKind { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv };
// Printed with underscores; read as the measurement schema and op lists name them.
inline constexpr EnumName<CollectiveKind> kCollectiveKindNames[] = {
    {CollectiveKind::kAllReduce, "all_reduce", NameUse::kPrinted},
    {CollectiveKind::kAllGather, "all_gather", NameUse::kPrinted},
    {CollectiveKind::kReduceScatter, "reduce_scatter", NameUse::kPrinted},
    {CollectiveKind::kAllToAll, "all_to_all", NameUse::kPrinted},
    {CollectiveKind::kSendRecv, "send_recv", NameUse::kPrinted},
    {CollectiveKind::kAllReduce, "allreduce", NameUse::kRead},
    {CollectiveKind::kAllGather, "allgather", NameUse::kRead},
    {CollectiveKind::kReduceScatter, "reducescatter", NameUse::kRead},
    {CollectiveKind::kAllToAll, "alltoall", NameUse::kRead},
    {CollectiveKind::kSendRecv, "sendrecv", NameUse::kRead},
};

// A dependency on op `op` of rank (this rank + rank_offset) mod tp. A data dependency reads the
// tensor that op produces; an ordering one only follows it on the same stream.
struct Dep {
  OpId op = 0;
  int rank_offset = 0;
  bool data = true;
};

// The group a collective runs over: the TP group the program simulates, the data-parallel group (the GPUs
// holding the same TP rank in every replica, outside the simulated group), or an MoE layer's expert-parallel
// group (group_size consecutive GPUs, the TP group's among them). The last two are costed in closed form
// (sim/engine/data_group.hpp). A pipelined step simulated whole (--no-symmetry) adds kPipeline: one send of a stage's
// output (or input gradient) from each GPU of Op::pipeline_stage to the same TP rank of Op::receiving_stage.
enum class CommGroup : uint8_t { kTensor, kData, kExpert, kPipeline };
inline constexpr EnumName<CommGroup> kCommGroupNames[] = {
    {CommGroup::kTensor, "tensor"},
    {CommGroup::kData, "data"},
    {CommGroup::kExpert, "expert"},
    {CommGroup::kPipeline, "pipeline"},
};
std::string to_string(CommGroup group);

// Which part of a step an op belongs to: a pass's forward, a training step's backward, the forward
// re-run for recomputation before a layer's backward, or the optimizer.
enum class OpStage : uint8_t { kForward, kBackward, kRecompute, kOptimizer };
inline constexpr EnumName<OpStage> kOpStageNames[] = {
    {OpStage::kForward, "forward"},
    {OpStage::kBackward, "backward"},
    {OpStage::kRecompute, "recompute"},
    {OpStage::kOptimizer, "optimizer"},
};
std::string to_string(OpStage stage);

// What an op's output is to a selective-recomputation save list (workload.hpp's SaveList): a linear's
// matmul output (whole or a pipeline's pieces), an attention output, or a collective's result (a
// pipeline's received all-gather steps and the ops finishing its reduce-scatter count as theirs).
enum class SavedAs : uint8_t { kOther, kMatmul, kAttention, kAllGather, kReduceScatter, kAllReduce, kAllToAll };

// A GEMM [m, k] x [k, n], or a grouped GEMM: one kernel over `groups` independent problems (an MoE layer's
// experts, each with its own weights). Their m (forward, data gradient: each problem [m / groups, k] x [k, n]) or,
// with groups_split_k, their k (the weight gradient: each problem [m, k / groups] x [k / groups, n], one [m, n]
// output per expert) are split evenly among them; m, n and k are totals, so gemm_flops counts every problem.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  int64_t groups = 1;
  bool groups_split_k = false;
};

// Element widths: bf16, and fp8 (e4m3), whose GEMMs write bf16.
inline constexpr double kBf16Bytes = 2.0;
inline constexpr double kFp8Bytes = 1.0;
inline constexpr double kFp32Bytes = 4.0;

// HBM bytes of a GEMM that reads A [m, k] and B [k, n] once and writes C [m, n] once (a grouped GEMM: every
// problem's own B, or its own C when they split k).
double gemm_bytes(const GemmShape& shape, double elem_bytes);
// The same with operands and output of different widths (fp8: kFp8Bytes operands, a kBf16Bytes output).
double gemm_bytes(const GemmShape& shape, double operand_bytes, double output_bytes);

// FLOPs of a GEMM: a multiply and an add per m x n x k.
inline double gemm_flops(const GemmShape& s) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
}

// A linear-attention layer's gated-delta-rule kernel (kAttention ops only; kNone: FlashAttention). kChunked
// (prefill, forward): the chunked form, whose state pass walks `chunk_steps` chunks in order along each of
// `chains` independent (sequence, value head, value block) chains; kRecurrent (decode): one token per
// sequence, reading and writing each sequence's state.
enum class LinearKernel : uint8_t { kNone, kChunked, kRecurrent };
struct LinearScan {
  LinearKernel kernel = LinearKernel::kNone;
  int64_t chunk_steps = 0;
  int64_t chains = 0;
};

struct Op {
  std::string name;  // e.g. "L3.attn.qkv_proj.piece2"
  OpKind kind = OpKind::kMemory;
  Stream stream = Stream::kCompute;
  int layer = 0;
  int module = 0;  // 2 x layer for attention, 2 x layer + 1 for the FFN; -1 after the last layer
  OpStage stage = OpStage::kForward;
  SavedAs saved_as = SavedAs::kOther;
  int32_t linear = -1;        // kGemm: the linear it computes (its pieces share it), numbered in issue order
  int32_t linear_part = 0;    // kGemm of a linear run as separate GEMMs (separate q/k/v, gate/up): which one
  bool quantisation = false;  // an fp8 recipe's amax, cast or swizzle: the tensor it reads, in other bytes
  GemmShape gemm;             // kGemm
  // kGemm: a part of one tile-fused kernel (a GEMM whose tiles wait for their rows' signal, as Flux and
  // TileLink run AG+GEMM and GEMM+RS): the whole kernel's M (0: the op is a kernel of its own), and whether
  // an earlier part started the kernel. A part takes its share of the whole kernel's tensor-core time (the
  // whole GEMM's waves, no piece's); only the first is launched and pays the launch overhead. A memory-bound op
  // may continue the kernel issued just before it on its stream likewise (ProgramBuilder::continue_kernel).
  int64_t fused_rows = 0;
  bool continues_kernel = false;
  // kMemory continuing the memory-bound kernel it follows on its stream (a fused residual add + RMSNorm): the
  // bytes of that kernel's result it takes from registers, which it reads from HBM when it runs alone (a
  // recomputation that re-issues it without that kernel).
  double bytes_in_registers = 0;
  bool fp8 = false;        // kGemm, kAttention: e4m3 operands (Q, K, V), bf16 output
  LinearScan linear_scan;  // kAttention: a linear-attention kernel
  // kAttention: the causal mask's diagonal, as its query rows over twice the kernel's (query, key) pairs of one
  // sequence and head: 1 / L for a causal square of L tokens; 0 where no key is masked (no mask, or a block of a
  // context-parallel ring wholly below the diagonal). The diagonal's tiles cost beyond their FLOPs
  // (attention.backward_causal_tokens, sim/cost/cost_model.cpp).
  double causal_inverse_length = 0;
  double flops = 0;          // kGemm, kAttention, kMemory (arithmetic, informative for memory ops)
  double bytes_read = 0;     // HBM bytes read by a kernel
  double bytes_written = 0;  // HBM bytes written by a kernel
  // kCollective: the full tensor (all-reduce input, all-gather output, reduce-scatter input).
  CollectiveKind collective = CollectiveKind::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kNccl;
  Protocol protocol = Protocol::kAuto;  // ring steps only
  double tensor_bytes = 0;
  CommGroup group = CommGroup::kTensor;
  int group_size = 1;
  int group_stride = 1;  // GPUs between consecutive members on the job's placement (the TP group's: 1)
  // kExchange: one step of a pipelined transfer.
  int send_offset = 0;  // 0: sends nothing
  int recv_offset = 0;  // 0: receives nothing
  double message_bytes = 0;
  Transport transport = Transport::kSm;  // kCollective always uses kSm
  // kCollective: the SMs its kernel holds where the framework sets them (Transformer Engine's userbuffers
  // num_sm); 0: NCCL's channels for the plan (sim/sm_sharing.hpp).
  int comm_sms = 0;
  // A pipelined step simulated whole (model/pipeline/pipeline_program.hpp): the stage whose GPUs run the op (-1: every
  // GPU simulated, as in every other program), and for a send between stages the stage that receives it (the op runs on
  // both: the sender's side and the receiver's). A dependency on an op that does not run on a GPU's stage is none.
  int pipeline_stage = -1;
  int receiving_stage = -1;
  std::vector<Dep> deps;  // includes the previous op on the same stream
  // The tensor the op produces, read by the ops that depend on it with data dependencies: a kernel's
  // output, a collective's result on this rank, an exchange's received message.
  double output_bytes = 0;
  std::string shape;  // human-readable shape for traces and reports
};

// Bytes of the tensor `op` produces (the output_bytes the builder records): a kernel's written bytes, an
// all-reduce's tensor, an all-gather's gathered tensor, a reduce-scatter's shard, an exchange's message
// when it receives one.
double produced_bytes(const Op& op);

// Whether `op` runs on the GPUs of pipeline stage `stage` (every op does outside a whole pipelined step).
inline bool runs_on_stage(const Op& op, int stage) {
  return op.pipeline_stage < 0 || op.pipeline_stage == stage || op.receiving_stage == stage;
}

bool is_kernel(OpKind kind);
bool is_communication(OpKind kind);
std::string to_string(OpKind kind);
std::string to_string(Stream stream);
std::string to_string(CollectiveKind kind);
// "allreduce", "allgather", "reducescatter", "alltoall", "sendrecv" (the measurement schema's names).
std::optional<CollectiveKind> collective_kind_named(const std::string& name);
// A stream by its op-list name (compute, comm, copy, comm2, copy2, comm3, copy3, comm4, compute2); nullopt else.
std::optional<Stream> stream_named(const std::string& name);

// Bytes one rank puts on the wire for a communication op (ring all-reduce: 2(n-1)/n of the tensor,
// ring all-gather and reduce-scatter: (n-1)/n, an exchange step: its message if it sends; a direct
// all-reduce sends the whole tensor to each of the n-1 peers). Auto collectives count as rings.
double wire_bytes_per_rank(const Op& op);

}  // namespace tpsim::model
