// nccl-tests conventions (src/*.cu of NVIDIA/nccl-tests: the *GetCollByteCount and *GetBw functions).
#include "real/core/collective.hpp"

#include "base/measurement.hpp"

#include "base/input_error.hpp"

namespace tpsim::real {

Collective parse_collective(const std::string& text) {
  if (text == "allreduce" || text == "all_reduce") return Collective::kAllReduce;
  if (text == "allgather" || text == "all_gather") return Collective::kAllGather;
  if (text == "reducescatter" || text == "reduce_scatter") return Collective::kReduceScatter;
  if (text == "alltoall" || text == "all_to_all") return Collective::kAllToAll;
  if (text == "sendrecv") return Collective::kSendRecv;
  throw InputError("unknown collective '" + text + "'; valid: allreduce, allgather, reducescatter, alltoall, sendrecv");
}

std::string schema_name(Collective collective) {
  switch (collective) {
    case Collective::kAllReduce:
      return "allreduce";
    case Collective::kAllGather:
      return "allgather";
    case Collective::kReduceScatter:
      return "reducescatter";
    case Collective::kAllToAll:
      return "alltoall";
    case Collective::kSendRecv:
      return "sendrecv";
  }
  return "";
}

double bus_factor(Collective collective, int ranks) {
  return calibrate::bus_factor(schema_name(collective), ranks);
}

int64_t size_alignment(Collective collective, int ranks, int64_t element_bytes) {
  const bool split = collective == Collective::kAllGather || collective == Collective::kReduceScatter ||
                     collective == Collective::kAllToAll;
  return split ? element_bytes * ranks : element_bytes;
}

ElementCounts element_counts(Collective collective, int64_t bytes, int ranks, int64_t element_bytes) {
  const int64_t alignment = size_alignment(collective, ranks, element_bytes);
  if (bytes <= 0 || bytes % alignment != 0) {
    throw InputError("size " + std::to_string(bytes) + " B: a " + schema_name(collective) + " over " +
                     std::to_string(ranks) + " ranks needs a positive multiple of " + std::to_string(alignment) + " B");
  }
  const int64_t total = bytes / element_bytes;
  switch (collective) {
    case Collective::kAllGather:
      return {total / ranks, total};
    case Collective::kReduceScatter:
      return {total, total / ranks};
    case Collective::kAllReduce:
    case Collective::kAllToAll:
    case Collective::kSendRecv:
      return {total, total};
  }
  return {total, total};
}

int64_t collective_element_bytes(const std::string& dtype) {
  if (dtype == "float32") return 4;
  if (dtype == "bf16") return 2;
  throw InputError("collective dtype '" + dtype + "'; valid: float32, bf16");
}

}  // namespace tpsim::real
