// LayerGraph storage and its structural checks (acyclic, every op reached) via Boost.Graph.
#include "model/layer_graph.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/topological_sort.hpp>
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

void LayerGraph::check_well_formed() const {
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  const size_t root = ops_.size();  // a virtual source feeding every op without dependencies
  Graph graph(ops_.size() + 1);
  for (size_t id = 0; id < ops_.size(); ++id) {
    if (ops_[id].deps.empty()) boost::add_edge(root, id, graph);
    for (const Dep& dep : ops_[id].deps) boost::add_edge(dep.op, id, graph);
  }
  std::vector<size_t> order;
  try {
    boost::topological_sort(graph, std::back_inserter(order));
  } catch (const boost::not_a_dag&) {
    throw std::logic_error("layer graph has a dependency cycle");
  }
  std::vector<boost::default_color_type> colors(ops_.size() + 1);
  boost::breadth_first_search(
      graph, root,
      boost::color_map(boost::make_iterator_property_map(colors.begin(), boost::get(boost::vertex_index, graph))));
  for (size_t id = 0; id < ops_.size(); ++id) {
    if (colors[id] == boost::white_color) throw std::logic_error("op " + ops_[id].name + " is never reached");
  }
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
