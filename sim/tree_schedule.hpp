// NCCL's double binary tree all-reduce as lockstep steps: inside each node a chain towards its first
// GPU, across nodes two binary trees (one over the node order, one over its mirror, so that the
// leaves of one are mostly inner nodes of the other), each carrying half the tensor in pipelined
// chunks: up the tree (reduce), then down it (broadcast), both phases in flight at once.
#pragma once

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

}  // namespace tpsim::sim
