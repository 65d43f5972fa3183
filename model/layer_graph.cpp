// LayerGraph storage: ops appended in a topological order, and sums over them.
#include "model/layer_graph.hpp"

#include <stdexcept>

namespace tpsim::model {

OpId LayerGraph::add(Op op) {
  const auto id = static_cast<OpId>(ops_.size());
  for (const Dep& dep : op.deps) {
    if (dep.op >= id) throw std::logic_error("op " + op.name + " depends on an op not yet added");
  }
  ops_.push_back(std::move(op));
  return id;
}

double LayerGraph::matmul_flops() const {
  double total = 0;
  for (const Op& op : ops_) {
    if (op.kind == OpKind::kGemm || op.kind == OpKind::kAttention) total += op.flops;
  }
  return total;
}

double LayerGraph::wire_bytes_per_rank() const {
  double total = 0;
  for (const Op& op : ops_) total += model::wire_bytes_per_rank(op);
  return total;
}

}  // namespace tpsim::model
