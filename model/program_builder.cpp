// Op constructors with FLOP and byte counts, and same-stream ordering.
#include "model/program_builder.hpp"

#include <stdexcept>

#include "model/input_error.hpp"

namespace tpsim::model {

std::string shape_text(int64_t rows, int64_t cols) {
  return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

OpId ProgramBuilder::issue(Op op, const std::vector<OpId>& deps) {
  std::vector<Dep> rank_local;
  rank_local.reserve(deps.size());
  for (OpId dep : deps) rank_local.push_back(Dep{dep, 0});
  return issue_with(std::move(op), std::move(rank_local));
}

OpId ProgramBuilder::issue_with(Op op, std::vector<Dep> deps) {
  auto& last = last_on_stream_[static_cast<int>(op.stream)];
  if (last) deps.push_back(Dep{*last, 0, false});
  if (op.output_bytes == 0) op.output_bytes = produced_bytes(op);
  op.deps = std::move(deps);
  op.layer = layer_;
  op.module = module_;
  op.stage = stage_;
  op.name = prefix() + op.name;
  const OpId id = graph_.add(std::move(op));
  last = id;
  return id;
}

std::string ProgramBuilder::prefix_of(OpStage stage) const {
  const std::string recompute = stage == OpStage::kRecompute ? "recompute." : "";
  return name_prefix_ + (module_ < 0 ? std::string() : "L" + std::to_string(layer_) + ".") + recompute;
}

OpId ProgramBuilder::repeat(const Op& original, std::vector<Dep> deps) {
  const std::string forward = prefix_of(OpStage::kForward);
  if (original.stage != OpStage::kForward || original.name.compare(0, forward.size(), forward) != 0) {
    throw std::logic_error("op " + original.name + " is not a forward op of " + forward);
  }
  Op op = original;
  op.name = original.name.substr(forward.size());
  op.deps.clear();
  return issue_with(std::move(op), std::move(deps));
}

OpId ProgramBuilder::gemm(const std::string& name, GemmShape shape, const std::vector<OpId>& deps) {
  return linear_gemm(name, name, shape, deps);
}

OpId ProgramBuilder::gemm_piece(const std::string& name, int piece, GemmShape shape, const std::vector<OpId>& deps) {
  return linear_gemm(name, name + ".piece" + std::to_string(piece), shape, deps);
}

OpId ProgramBuilder::linear_gemm(const std::string& linear_name, const std::string& name, GemmShape shape,
                                 const std::vector<OpId>& deps) {
  const std::string linear = prefix() + linear_name;
  if (linears_ == 0 || linear != last_linear_name_) ++linears_;
  last_linear_name_ = linear;
  Op op;
  op.name = name;
  op.kind = OpKind::kGemm;
  op.saved_as = SavedAs::kMatmul;
  op.linear = linears_ - 1;
  op.gemm = shape;
  op.flops = gemm_flops(shape);
  op.fp8 = gemm_fp8_;
  op.bytes_read = (gemm_fp8_ ? kFp8Bytes : elem_bytes_) * static_cast<double>(shape.m * shape.k + shape.k * shape.n);
  op.bytes_written = elem_bytes_ * static_cast<double>(shape.m * shape.n);
  op.shape = "M=" + std::to_string(shape.m) + " N=" + std::to_string(shape.n) + " K=" + std::to_string(shape.k) +
             (gemm_fp8_ ? " fp8" : "");
  return issue(std::move(op), deps);
}

OpId ProgramBuilder::memory(const std::string& name, double read_bytes, double written_bytes, double flops,
                            const std::string& shape, const std::vector<OpId>& deps) {
  Op op;
  op.name = name;
  op.kind = OpKind::kMemory;
  op.flops = flops;
  op.bytes_read = read_bytes;
  op.bytes_written = written_bytes;
  op.shape = shape;
  return issue(std::move(op), deps);
}

OpId ProgramBuilder::attention(const std::string& name, double flops, double read_bytes, double written_bytes,
                               double output_bytes, const std::string& shape, const std::vector<OpId>& deps) {
  Op op;
  op.name = name;
  op.kind = OpKind::kAttention;
  op.saved_as = SavedAs::kAttention;
  op.fp8 = attention_fp8_;
  op.flops = flops;
  op.bytes_read = read_bytes;
  op.bytes_written = written_bytes;
  op.output_bytes = output_bytes;
  op.shape = shape;
  return issue(std::move(op), deps);
}

OpId ProgramBuilder::collective(const std::string& name, CollectiveKind kind, double tensor_bytes,
                                const std::string& shape, const std::vector<OpId>& deps) {
  Op op;
  op.name = name;
  op.kind = OpKind::kCollective;
  op.stream = comm_stream_.value_or(Stream::kComm);
  op.collective = kind;
  op.saved_as = kind == CollectiveKind::kAllGather       ? SavedAs::kAllGather
                : kind == CollectiveKind::kReduceScatter ? SavedAs::kReduceScatter
                : kind == CollectiveKind::kAllReduce     ? SavedAs::kAllReduce
                                                         : SavedAs::kOther;
  op.algorithm = algorithm_;
  op.protocol = protocol_;
  op.tensor_bytes = tensor_bytes;
  op.group_size = tp();
  op.transport = Transport::kSm;
  op.shape = shape;
  return issue(std::move(op), deps);
}

OpId ProgramBuilder::exchange(const std::string& name, int send_offset, int recv_offset, double bytes,
                              Transport transport, const std::string& shape, const std::vector<OpId>& deps) {
  if (exchanges_as_nccl_calls_ && transport == Transport::kSm) {
    if (send_offset != 1 || recv_offset != -1) {
      throw InputError(name +
                       ": NCCL send/recv calls are modelled as ring steps (send to rank+1, receive from "
                       "rank-1); use ring order");
    }
    return collective(name, CollectiveKind::kSendRecv, bytes, shape, deps);
  }
  Op op;
  op.name = name;
  op.kind = OpKind::kExchange;
  op.stream = comm_stream_.value_or(transport == Transport::kSm ? Stream::kComm : Stream::kCopy);
  op.send_offset = send_offset;
  op.recv_offset = recv_offset;
  op.message_bytes = bytes;
  op.transport = transport;
  op.group_size = tp();
  op.shape = shape;
  return issue(std::move(op), deps);
}

}  // namespace tpsim::model
