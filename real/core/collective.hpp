// The collectives real/ measures and nccl-tests' conventions for them: the reported size (the whole
// tensor: all-reduce buffer, all-gather output, reduce-scatter input, all-to-all buffer, send/recv
// message), per-rank element counts, and the bus-bandwidth factors.
#pragma once

#include <cstdint>
#include <string>

#include "base/enum_names.hpp"

namespace tpsim::real {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv };
// The measurement schema's names, and nccl-tests' spellings with an underscore, accepted too.
inline constexpr EnumName<Collective> kCollectiveNames[] = {
    {Collective::kAllReduce, "allreduce"},
    {Collective::kAllGather, "allgather"},
    {Collective::kReduceScatter, "reducescatter"},
    {Collective::kAllToAll, "alltoall"},
    {Collective::kSendRecv, "sendrecv"},
    {Collective::kAllReduce, "all_reduce", NameUse::kAlias},
    {Collective::kAllGather, "all_gather", NameUse::kAlias},
    {Collective::kReduceScatter, "reduce_scatter", NameUse::kAlias},
    {Collective::kAllToAll, "all_to_all", NameUse::kAlias},
};

// "allreduce", "allgather", "reducescatter", "alltoall", "sendrecv" (nccl-tests' "all_reduce" style
// is accepted too); throws InputError naming the valid ones.
Collective parse_collective(const std::string& text);
// The measurement schema's name ("allreduce", ...).
std::string schema_name(Collective collective);

// busbw = algbw x factor: 2(n-1)/n all-reduce; (n-1)/n all-gather, reduce-scatter, all-to-all; 1 send/recv.
double bus_factor(Collective collective, int ranks);

// Elements each rank sends and receives for a collective whose nccl-tests size is `bytes`.
struct ElementCounts {
  int64_t send = 0;
  int64_t recv = 0;
};
ElementCounts element_counts(Collective collective, int64_t bytes, int ranks, int64_t element_bytes);

// The sizes a collective can take are multiples of this (one element per rank where the tensor is split).
int64_t size_alignment(Collective collective, int ranks, int64_t element_bytes);

// Collective element types: "float32" (nccl-tests' default) or "bf16"; throws InputError otherwise.
int64_t collective_element_bytes(const std::string& dtype);

}  // namespace tpsim::real
