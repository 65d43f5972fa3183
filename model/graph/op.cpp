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
  switch (stage) {
    case OpStage::kForward:
      return "forward";
    case OpStage::kBackward:
      return "backward";
    case OpStage::kRecompute:
      return "recompute";
    case OpStage::kOptimizer:
      return "optimizer";
  }
  return "forward";
}

bool is_kernel(OpKind kind) {
  return kind == OpKind::kGemm || kind == OpKind::kAttention || kind == OpKind::kMemory;
}

bool is_communication(OpKind kind) {
  return !is_kernel(kind);
}

std::string to_string(CommGroup group) {
  switch (group) {
    case CommGroup::kData:
      return "data";
    case CommGroup::kExpert:
      return "expert";
    case CommGroup::kPipeline:
      return "pipeline";
    default:
      return "tensor";
  }
}

std::string to_string(OpKind kind) {
  switch (kind) {
    case OpKind::kGemm:
      return "gemm";
    case OpKind::kAttention:
      return "attention";
    case OpKind::kMemory:
      return "memory";
    case OpKind::kCollective:
      return "collective";
    case OpKind::kExchange:
      return "exchange";
  }
  return "memory";
}

const std::vector<std::string>& stream_names() {
  static const std::vector<std::string> names = {"compute", "comm",  "copy",  "comm2",   "copy2",
                                                 "comm3",   "copy3", "comm4", "compute2"};
  return names;
}

std::optional<Stream> stream_named(const std::string& name) {
  const std::vector<std::string>& names = stream_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<Stream>(i);
  }
  return std::nullopt;
}

std::string to_string(Stream stream) {
  if (stream == Stream::kCopy) return "copy_engine";  // the TP modes' copy-engine stream
  const auto index = static_cast<size_t>(stream);
  return index < stream_names().size() ? stream_names()[index] : "compute";
}

std::string to_string(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
    case CollectiveKind::kSendRecv:
      return "send_recv";
  }
  return "all_reduce";
}

std::optional<CollectiveKind> collective_kind_named(const std::string& name) {
  if (name == "allreduce") return CollectiveKind::kAllReduce;
  if (name == "allgather") return CollectiveKind::kAllGather;
  if (name == "reducescatter") return CollectiveKind::kReduceScatter;
  if (name == "alltoall") return CollectiveKind::kAllToAll;
  if (name == "sendrecv") return CollectiveKind::kSendRecv;
  return std::nullopt;
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
