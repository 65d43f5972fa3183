// One way of running the TP layer: blocking TP, sequence parallel, async TP (chunked), delayed TP, or no comm.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/enum_names.hpp"

namespace tpsim::model {

enum class TpMode { kTp, kSp, kAsync, kDtp, kNoComm };
inline constexpr EnumName<TpMode> kTpModeNames[] = {
    {TpMode::kTp, "tp"},   {TpMode::kSp, "sp"},         {TpMode::kAsync, "async"},
    {TpMode::kDtp, "dtp"}, {TpMode::kNoComm, "nocomm"},
};
// sm: NCCL-like kernels that occupy SMs; copy_engine: cudaMemcpyPeer-like DMA, no SMs.
enum class Transport { kSm, kCopyEngine };
inline constexpr EnumName<Transport> kTransportNames[] = {
    {Transport::kCopyEngine, "copy_engine"},
    {Transport::kSm, "sm"},
};
// ring: shards are relayed rank to rank; direct: each shard moves straight from its owner.
enum class ChunkOrder { kRing, kDirect };
inline constexpr EnumName<ChunkOrder> kChunkOrderNames[] = {
    {ChunkOrder::kDirect, "direct"},
    {ChunkOrder::kRing, "ring"},
};
// How a collective moves its data. kNccl (the default) is what NCCL runs: its tuner's choice of ring,
// tree or NVLS and of protocol for the size, rank count and fabric (see sim/cost/nccl_tuner.hpp). kAuto is
// the fastest plan the calibration profile has on an idle fabric, custom kernels included. The others
// are asked for by name: kRing (NCCL_ALGO=Ring), kDirect the one-shot all-reduce (each rank reads every
// peer's whole tensor in one step) and kTwoShot the two-shot one (a direct reduce-scatter, then a
// direct all-gather), as custom all-reduce kernels (vLLM, TensorRT-LLM) run them; kNvls (NVSwitch
// in-switch reduction), kTree NCCL's double binary tree all-reduce (chains inside nodes, two binary trees
// across them, pipelined in chunks), kMultimem the symmetric-memory kernels (PyTorch, vLLM, TensorRT-LLM)
// that reduce or broadcast through NVSwitch multicast (multimem.ld_reduce / multimem.st) without NCCL.
// kPointToPoint is how all-to-alls and send/recvs run (NCCL
// send/recv messages): a plan's outcome, never asked for by name. kDeepEp: an MoE layer's dispatch and combine
// as DeepEP's normal kernels run them (moe: {dispatcher: deepep}; sim/engine/data_group.hpp), never a variant's;
// kDeepEpLowLatencyDispatch and kDeepEpLowLatencyCombine: the same as its low-latency kernels run them.
enum class CollectiveAlgorithm {
  kNccl,
  kAuto,
  kRing,
  kDirect,
  kNvls,
  kTwoShot,
  kTree,
  kMultimem,
  kPointToPoint,
  kDeepEp,
  kDeepEpLowLatencyDispatch,
  kDeepEpLowLatencyCombine
};
// The names a variant's `collective:` takes, in the order its message lists them; the plans' outcomes, printed
// only; and the spellings without an underscore, as `tpsim predict --algorithm oneshot|twoshot` takes them.
inline constexpr EnumName<CollectiveAlgorithm> kCollectiveAlgorithmNames[] = {
    {CollectiveAlgorithm::kNccl, "nccl"},
    {CollectiveAlgorithm::kAuto, "auto"},
    {CollectiveAlgorithm::kRing, "ring"},
    {CollectiveAlgorithm::kDirect, "one_shot"},
    {CollectiveAlgorithm::kTwoShot, "two_shot"},
    {CollectiveAlgorithm::kNvls, "nvls"},
    {CollectiveAlgorithm::kTree, "tree"},
    {CollectiveAlgorithm::kMultimem, "multimem"},
    {CollectiveAlgorithm::kPointToPoint, "point_to_point", NameUse::kPrinted},
    {CollectiveAlgorithm::kDeepEp, "deepep", NameUse::kPrinted},
    {CollectiveAlgorithm::kDeepEpLowLatencyDispatch, "deepep_ll_dispatch", NameUse::kPrinted},
    {CollectiveAlgorithm::kDeepEpLowLatencyCombine, "deepep_ll_combine", NameUse::kPrinted},
    {CollectiveAlgorithm::kDirect, "oneshot", NameUse::kAlias},
    {CollectiveAlgorithm::kTwoShot, "twoshot", NameUse::kAlias},
};

// Whether `algorithm` is one of DeepEP's kernels (an MoE all-to-all under moe: {dispatcher: deepep}).
inline bool is_deepep(CollectiveAlgorithm algorithm) {
  return algorithm == CollectiveAlgorithm::kDeepEp || algorithm == CollectiveAlgorithm::kDeepEpLowLatencyDispatch ||
         algorithm == CollectiveAlgorithm::kDeepEpLowLatencyCombine;
}

// NCCL's protocols for ring steps (NCCL_PROTO): Simple for large messages, LL and LL128 for small ones
// (lower latency, lower bandwidth); auto runs the fastest regime the profile has. kLowLatency is a
// plan's outcome, never asked for by name: the one low-latency regime fitted on measurements that do
// not say whether LL or LL128 ran.
enum class Protocol { kAuto, kSimple, kLL, kLL128, kLowLatency };
inline constexpr EnumName<Protocol> kProtocolNames[] = {
    {Protocol::kAuto, "auto"},
    {Protocol::kSimple, "simple"},
    {Protocol::kLL, "ll"},
    {Protocol::kLL128, "ll128"},
    {Protocol::kLowLatency, "low_latency", NameUse::kPrinted},
};

struct Variant {
  std::string name;
  TpMode mode = TpMode::kSp;
  int chunks = 1;                                // async only: GEMM pieces per AG+GEMM / GEMM+RS
  bool chunks_auto = false;                      // async only: try every valid count, keep the fastest
  Transport transport = Transport::kCopyEngine;  // async only
  ChunkOrder order = ChunkOrder::kDirect;        // async only; direct is what PyTorch's micro-pipeline TP does
  bool boundary_overlap = false;                 // async only: all-gather before the RMSNorm
  int delta = 1;                                 // dtp only: modules between a reduction and its use
  bool dtp_allgather = false;                    // dtp only: all-gather the partials instead of all-reduce
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kNccl;
  Protocol protocol = Protocol::kAuto;  // NCCL_PROTO of its collectives' ring steps
  // An MoE model's inference pass as two micro-batches of half the sequences whose MoE stages interleave, so that
  // one's all-to-all runs beside the other's compute (SGLang's two-batch overlap).
  bool two_batch_overlap = false;
  // A training step of an MoE model under Megatron's combined 1F1B schedule (overlap_moe_expert_parallel_comm):
  // one micro-batch's forward beside the previous one's backward, each one's all-to-alls beside the other's
  // compute (model/moe/combined_1f1b.hpp).
  bool overlap_moe_expert_parallel_comm = false;

  bool operator==(const Variant&) const = default;  // every field (a memo's key)
};

std::string to_string(TpMode mode);
std::string to_string(Transport transport);
std::string to_string(ChunkOrder order);
std::string to_string(CollectiveAlgorithm algorithm);
// A name or alias of kCollectiveAlgorithmNames ("one_shot" or "oneshot", ...); nullopt else.
std::optional<CollectiveAlgorithm> collective_algorithm_named(const std::string& name);
std::string to_string(Protocol protocol);
// "auto", "simple", "ll", "ll128"; nullopt for anything else.
std::optional<Protocol> protocol_named(const std::string& name);

// Empty when `chunks` suits tp ranks, else why not: chunks must be 1, divide tp, or be a multiple of it.
std::string check_chunks(int chunks, int tp);

}  // namespace tpsim::model
