// nccl-tests conventions (src/*.cu of NVIDIA/nccl-tests: the *GetCollByteCount and *GetBw functions).
#include "real/core/collective.hpp"

#include "base/measurement.hpp"

#include "base/input_error.hpp"
#include "base/names.hpp"

namespace tpsim::real {

Collective parse_collective(const std::string& text) {
  if (const std::optional<Collective> collective = value_named(kCollectiveNames, text)) return *collective;
  throw InputError("unknown collective '" + text + "'; valid: " + model::join_names(names_of(kCollectiveNames)));
}

std::string schema_name(Collective collective) {
  return std::string(name_of(kCollectiveNames, collective));
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
