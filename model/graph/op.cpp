// Names of op enums and the bytes each communication op sends.
#include "model/graph/op.hpp"

namespace tpsim::model {

double gemm_bytes(const GemmShape& s, double elem_bytes) {
  return gemm_bytes(s, elem_bytes, elem_bytes);
}

double gemm_bytes(const GemmShape& s, double operand_bytes, double output_bytes) {
  const auto weights = static_cast<double>(s.k * s.n) * (s.groups_split_k ? 1.0 : static_cast<double>(s.groups));
  const auto outputs = static_cast<double>(s.m * s.n) * (s.groups_split_k ? static_cast<double>(s.groups) : 1.0);
  return operand_bytes * (static_cast<double>(s.m * s.k) + weights) + output_bytes * outputs;
}

double produced_bytes(const Op& op) {
  switch (op.kind) {
    case OpKind::kGemm:
    case OpKind::kAttention:
    case OpKind::kMemory:
      return op.bytes_written;
    case OpKind::kCollective:
      return op.collective == CollectiveKind::kReduceScatter ? op.tensor_bytes / op.group_size : op.tensor_bytes;
    case OpKind::kExchange:
      return op.recv_offset != 0 ? op.message_bytes : 0.0;
  }
  return 0.0;
}

std::string to_string(OpStage stage) {
  return std::string(name_of(kOpStageNames, stage));
}

bool is_kernel(OpKind kind) {
  return kind == OpKind::kGemm || kind == OpKind::kAttention || kind == OpKind::kMemory;
}

bool is_communication(OpKind kind) {
  return !is_kernel(kind);
}

std::string to_string(CommGroup group) {
  return std::string(name_of(kCommGroupNames, group));
}

std::string to_string(OpKind kind) {
  return std::string(name_of(kOpKindNames, kind));
}

std::optional<Stream> stream_named(const std::string& name) {
  return value_named(kStreamNames, name);
}

std::string to_string(Stream stream) {
  return std::string(name_of(kStreamNames, stream));
}

std::string to_string(CollectiveKind kind) {
  return std::string(name_of(kCollectiveKindNames, kind));
}

std::optional<CollectiveKind> collective_kind_named(const std::string& name) {
  return value_named(kCollectiveKindNames, name);
}

double wire_bytes_per_rank(const Op& op) {
  if (op.kind == OpKind::kExchange) return op.send_offset != 0 ? op.message_bytes : 0.0;
  if (op.kind != OpKind::kCollective) return 0.0;
  const double n = op.group_size;
  const double share = (n - 1.0) / n * op.tensor_bytes;
  if (op.collective == CollectiveKind::kSendRecv) return op.tensor_bytes;
  if (op.collective != CollectiveKind::kAllReduce) return share;
  return op.algorithm == CollectiveAlgorithm::kDirect ? (n - 1.0) * op.tensor_bytes : 2.0 * share;
}

}  // namespace tpsim::model
