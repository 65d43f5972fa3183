// NCCL's double binary tree all-reduce as lockstep steps: inside each node a chain towards its first
// GPU, across nodes two binary trees (one over the node order, one over its mirror, so that the
// leaves of one are mostly inner nodes of the other), each carrying half the tensor in pipelined
// chunks: up the tree (reduce), then down it (broadcast), both phases in flight at once.
#pragma once

#include <memory>
#include <vector>

namespace tpsim::sim {

// Per step, each rank's destinations and sources (a rank may appear twice: one message per tree).
struct PeerSchedule {
  std::vector<std::vector<std::vector<int>>> sends;  // [step][rank] -> destination ranks
  std::vector<std::vector<std::vector<int>>> recvs;  // [step][rank] -> source ranks
  int trees = 1;                                     // each tree carries 1/trees of the tensor
};

// `nodes` x `per_node` ranks (rank = node x per_node + local GPU), `chunks` pipelined chunks per tree.
PeerSchedule double_binary_tree(int nodes, int per_node, int chunks);
// The same, built once per (nodes, per_node, chunks) in this process and shared by every plan that
// asks (a graph's all-reduces of one size, and the auto rule trying the tree for each of them).
std::shared_ptr<const PeerSchedule> shared_double_binary_tree(int nodes, int per_node, int chunks);

}  // namespace tpsim::sim
