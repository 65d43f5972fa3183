// The rank program of a custom op list: each op in issue order on its stream, after the ops it names.
#include "model/graph/op_list.hpp"

#include <map>

#include "base/input_error.hpp"
#include "model/graph/program_builder.hpp"

namespace tpsim::model {

LayerGraph build_op_list_graph(const std::vector<OpSpec>& ops, int tp, Dtype dtype, CollectiveAlgorithm algorithm,
                               Protocol protocol) {
  LayerGraph graph(tp);
  ProgramBuilder b(graph, dtype_bytes(dtype));
  b.set_gemm_fp8(dtype == Dtype::kFp8);
  b.set_module(-1);  // no layer prefix in op names
  std::map<std::string, OpId> ids;
  for (const OpSpec& spec : ops) {
    std::vector<OpId> deps;
    for (const std::string& name : spec.after) deps.push_back(ids.at(name));
    b.set_collective_algorithm(spec.algorithm.value_or(algorithm));
    b.set_collective_protocol(spec.protocol != Protocol::kAuto ? spec.protocol : protocol);
    b.set_comm_stream(spec.stream);  // collectives and p2p steps: the stream read (or their default)
    OpId id = 0;
    if (spec.kind == "gemm") {
      id = b.gemm(spec.name, GemmShape{spec.m, spec.n, spec.k}, deps);
    } else if (spec.kind == "collective") {
      id = b.collective(spec.name, spec.collective, spec.bytes, "", deps);
    } else if (spec.kind == "p2p") {
      id = b.exchange(spec.name, spec.peer, -spec.peer, spec.bytes, spec.transport, "", deps);
    } else {
      // elementwise: reads and writes `bytes` each way; memcpy: a device copy of `bytes`.
      Op op;
      op.name = spec.name;
      op.kind = OpKind::kMemory;
      op.stream = spec.stream;
      op.bytes_read = spec.bytes;
      op.bytes_written = spec.bytes;
      op.shape = std::to_string(static_cast<int64_t>(spec.bytes)) + " B";
      id = b.issue(op, deps);
    }
    ids[spec.name] = id;
  }
  return graph;
}

}  // namespace tpsim::model
