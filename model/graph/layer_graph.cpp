// LayerGraph storage: ops appended in a topological order, and sums over them.
#include "model/graph/layer_graph.hpp"

#include <algorithm>
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

std::vector<OpId> LayerGraph::data_inputs(OpId id) const {
  std::vector<OpId> inputs;
  for (const Dep& dep : ops_.at(id).deps) {
    const bool seen = std::find(inputs.begin(), inputs.end(), dep.op) != inputs.end();
    if (dep.data && dep.rank_offset == 0 && !seen) inputs.push_back(dep.op);
  }
  return inputs;
}

std::vector<std::vector<OpId>> LayerGraph::consumers() const {
  std::vector<std::vector<OpId>> readers(ops_.size());
  for (OpId id = 0; id < ops_.size(); ++id) {
    for (const OpId input : data_inputs(id)) {
      if (readers[input].empty() || readers[input].back() != id) readers[input].push_back(id);
    }
  }
  return readers;
}

double LayerGraph::matmul_flops() const {
  double total = 0;
  for (const Op& op : ops_) {
    if (op.kind == OpKind::kGemm || op.kind == OpKind::kAttention) total += op.flops;
  }
  return total;
}

double LayerGraph::model_flops() const {
  double total = 0;
  for (const Op& op : ops_) {
    const bool matmul = op.kind == OpKind::kGemm || op.kind == OpKind::kAttention;
    if (matmul && op.stage != OpStage::kRecompute) total += op.flops;
  }
  return total;
}

double LayerGraph::wire_bytes_per_rank() const {
  double total = 0;
  for (const Op& op : ops_) total += model::wire_bytes_per_rank(op);
  return total;
}

}  // namespace tpsim::model
