// Builds the two up-trees (parent of every rank), their heights and depths, and the chunk timetable.
#include "sim/engine/tree_schedule.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace tpsim::sim {
namespace {

struct UpTree {
  std::vector<int> parent;  // -1 at the root
  std::vector<std::vector<int>> children;
  std::vector<int> level;  // longest path down to a leaf (leaves 0)
  std::vector<int> depth;  // distance from the root
  int root = 0;
};

// Inside a node, GPU l > 0 reduces into GPU l - 1; GPU 0 of a node into GPU 0 of its parent node in
// a binary heap over the node order (or over its mirror).
UpTree up_tree(int nodes, int per_node, bool mirrored) {
  const int ranks = nodes * per_node;
  UpTree t;
  t.parent.assign(ranks, -1);
  t.children.resize(ranks);
  const auto position = [&](int node) { return mirrored ? nodes - 1 - node : node; };
  for (int r = 0; r < ranks; ++r) {
    const int node = r / per_node, local = r % per_node;
    if (local > 0) {
      t.parent[r] = r - 1;
    } else if (position(node) > 0) {
      t.parent[r] = position((position(node) - 1) / 2) * per_node;
    } else {
      t.root = r;
    }
    if (t.parent[r] >= 0) t.children[t.parent[r]].push_back(r);
  }
  // Depths from the root down (breadth first), then levels from the deepest up.
  t.depth.assign(ranks, 0);
  std::vector<int> order = {t.root};
  for (size_t i = 0; i < order.size(); ++i) {  // by index: the queue grows while it is walked
    for (int child : t.children[order[i]]) {
      t.depth[child] = t.depth[order[i]] + 1;
      order.push_back(child);
    }
  }
  t.level.assign(ranks, 0);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    for (int child : t.children[*it]) t.level[*it] = std::max(t.level[*it], t.level[child] + 1);
  }
  return t;
}

}  // namespace

PeerSchedule double_binary_tree(int nodes, int per_node, int chunks) {
  const int ranks = nodes * per_node;
  PeerSchedule schedule;
  const auto add = [&](int step, int src, int dst) {
    if (static_cast<int>(schedule.sends.size()) <= step) {
      schedule.sends.resize(step + 1, std::vector<std::vector<int>>(ranks));
      schedule.recvs.resize(step + 1, std::vector<std::vector<int>>(ranks));
    }
    schedule.sends[step][src].push_back(dst);
    schedule.recvs[step][dst].push_back(src);
  };
  // One tree when the nodes cannot make two different ones.
  schedule.trees = nodes > 1 ? 2 : 1;
  for (int t = 0; t < schedule.trees; ++t) {
    const UpTree tree = up_tree(nodes, per_node, t == 1);
    const int top = tree.level[tree.root];
    for (int c = 0; c < chunks; ++c) {
      for (int r = 0; r < ranks; ++r) {
        // Up: once chunk c has arrived from every child. Down: once the root has reduced it.
        if (tree.parent[r] >= 0) add(c + tree.level[r], r, tree.parent[r]);
        for (int child : tree.children[r]) add(c + top + tree.depth[r], r, child);
      }
    }
  }
  return schedule;
}

std::shared_ptr<const PeerSchedule> shared_double_binary_tree(int nodes, int per_node, int chunks) {
  // tpsim plans on one thread per process (simulations in forked children, sweeps in worker
  // processes), so the cache is never shared across threads.
  static std::map<std::tuple<int, int, int>, std::shared_ptr<const PeerSchedule>> built;
  std::shared_ptr<const PeerSchedule>& schedule = built[{nodes, per_node, chunks}];
  if (!schedule) schedule = std::make_shared<const PeerSchedule>(double_binary_tree(nodes, per_node, chunks));
  return schedule;
}

}  // namespace tpsim::sim
