// The critical path as a least-waiting path through the op-instance DAG (Boost.Graph, DAG shortest paths).
#include "sim/report/critical_path.hpp"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dag_shortest_paths.hpp>
#include <cctype>
#include <map>

namespace tpsim::sim {
namespace {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                    boost::property<boost::edge_weight_t, double>>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;

// "L12.attn.o_proj.rs" -> "attn.o_proj.rs".
std::string without_layer(const std::string& name) {
  if (name.size() > 1 && name[0] == 'L' && std::isdigit(static_cast<unsigned char>(name[1]))) {
    const size_t dot = name.find('.');
    if (dot != std::string::npos) return name.substr(dot + 1);
  }
  return name;
}

}  // namespace

std::vector<PathLink> critical_path(const PassTrace& pass) {
  const Timeline& t = pass.timeline;
  const model::LayerGraph& graph = pass.graph;
  const int ranks = t.ranks;
  const size_t count = t.spans.size();  // ordered by (op, rank): instance (op, r) is op x ranks + r
  if (count == 0) return {};
  const Vertex source = count;
  Graph g(count + 1);
  const auto instance = [&](model::OpId op, int rank) { return static_cast<size_t>(op) * ranks + rank; };
  for (size_t i = 0; i < count; ++i) {
    const OpSpan& span = t.spans[i];
    boost::add_edge(source, i, span.start_s, g);
    for (const model::Dep& dep : graph.op(span.op).deps) {
      // A dependency's rank offset wraps inside the span's TP group (GPU r is rank r % tp of member r / tp).
      const int tp = graph.tp(), base = span.rank / tp * tp;
      const size_t from = instance(dep.op, base + ((span.rank % tp + dep.rank_offset) % tp + tp) % tp);
      boost::add_edge(from, i, std::max(0.0, span.start_s - t.spans[from].end_s), g);
    }
  }
  std::vector<double> waiting(count + 1);
  std::vector<Vertex> previous(count + 1);
  for (size_t v = 0; v <= count; ++v) previous[v] = v;
  boost::dag_shortest_paths(g, source, boost::distance_map(waiting.data()).predecessor_map(previous.data()));
  size_t last = 0;
  for (size_t i = 1; i < count; ++i) {
    if (t.spans[i].end_s > t.spans[last].end_s) last = i;
  }
  std::vector<PathLink> reversed;
  const double total = t.makespan_s > 0 ? t.makespan_s : 1;
  for (size_t v = last; v != source; v = previous[v]) {
    const OpSpan& span = t.spans[v];
    const model::Op& op = graph.op(span.op);
    reversed.push_back(
        {op.name, model::to_string(op.kind), span.rank, span.start_s, span.end_s, (span.end_s - span.start_s) / total});
    const double before = previous[v] == source ? 0.0 : t.spans[previous[v]].end_s;
    if (span.start_s > before) {
      reversed.push_back({"", "wait", span.rank, before, span.start_s, (span.start_s - before) / total});
    }
    if (previous[v] == v) break;  // unreachable: cannot happen, every instance has the source edge
  }
  return {reversed.rbegin(), reversed.rend()};
}

std::vector<std::pair<std::string, double>> critical_path_by_kind(const std::vector<PathLink>& path) {
  std::vector<std::pair<std::string, double>> out;
  for (const char* kind : {"gemm", "attention", "memory", "collective", "exchange", "forward", "backward",
                           "weight gradient", "send", "optimizer", "wait"}) {
    double share = 0;
    for (const PathLink& link : path) {
      if (link.kind == kind) share += link.share;
    }
    if (share > 0) out.emplace_back(kind, share);
  }
  return out;
}

std::vector<PathGroup> critical_path_groups(const std::vector<PathLink>& path, size_t top) {
  std::map<std::string, PathGroup> groups;
  for (const PathLink& link : path) {
    const std::string name = link.op.empty() ? "(waits)" : without_layer(link.op);
    PathGroup& g = groups[name];
    g.name = name;
    ++g.count;
    g.share += link.share;
  }
  std::vector<PathGroup> out;
  for (auto& [name, g] : groups) out.push_back(g);
  std::stable_sort(out.begin(), out.end(), [](const PathGroup& a, const PathGroup& b) { return a.share > b.share; });
  if (out.size() > top) out.resize(top);
  return out;
}

}  // namespace tpsim::sim
