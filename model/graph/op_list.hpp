// A custom op list (workload phase "ops", read by input/op_list.cpp): its ops, and the rank program they make.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/graph/layer_graph.hpp"
#include "model/layers/dtype.hpp"

namespace tpsim::model {

struct OpSpec {
  std::string name;
  std::string kind;  // gemm, collective, p2p, memcpy, elementwise
  Stream stream = Stream::kCompute;
  int64_t m = 0, n = 0, k = 0;  // gemm
  double bytes = 0;             // collective (whole tensor), p2p (message), memcpy, elementwise
  CollectiveKind collective = CollectiveKind::kAllReduce;
  std::optional<CollectiveAlgorithm> algorithm;  // collective; else the variant's
  Protocol protocol = Protocol::kAuto;           // collective: NCCL_PROTO for its ring steps
  int peer = 1;                                  // p2p: send to rank+peer, receive from rank-peer
  Transport transport = Transport::kCopyEngine;  // p2p
  std::vector<std::string> after;                // names of earlier ops it waits for

  bool operator==(const OpSpec&) const = default;  // every field (a memo's key)
};

// The rank program of an op list over `tp` ranks (GEMMs in `dtype`, other tensors bf16); collectives
// without their own algorithm or protocol use `algorithm` and `protocol` (the variant's).
LayerGraph build_op_list_graph(const std::vector<OpSpec>& ops, int tp, Dtype dtype, CollectiveAlgorithm algorithm,
                               Protocol protocol = Protocol::kAuto);

}  // namespace tpsim::model
