// Where an MoE layer's routed tokens go: each expert's share under the scenario's routing, what the busiest
// GPU of the expert-parallel group computes, and the tokens a capacity drops. Programs are the same on every
// rank, so each rank runs the busiest one's share: the all-to-alls and the expert GEMMs wait for it.
#pragma once

#include <cstdint>
#include <vector>

#include "model/layers/arch_spec.hpp"
#include "model/moe/expert_parallel.hpp"

namespace tpsim::model {

struct LayerRouting {
  double group_copies = 0;    // token copies the EP group routes: its GPUs' tokens x experts_per_token
  double busiest_copies = 0;  // copies the busiest GPU's experts compute (after drops)
  double mean_copies = 0;     // per GPU, after drops
  double dropped_copies = 0;  // over the group
  // The busiest GPU's experts that receive at least one copy, in expectation: an expert of share p misses each
  // of the group's tokens (k distinct experts each) with probability 1 - k p. A grouped GEMM reads only their
  // weights (a decode step's few tokens leave most experts idle; a training batch none).
  double busiest_active_experts = 0;
  // DeepEP's messages (Dispatcher::kDeepEp): the group's tokens the busiest GPU receives, each once however many of
  // its experts the token chose; and the distinct nodes a token's experts sit on, its own counted (a token crosses
  // the network once per other node), in expectation: a GPU (or node) holding experts of total share p misses a
  // token with probability (1 - p)^k, or exactly C(E - e, k) / C(E, k) for e of E experts under balanced routing.
  double busiest_received_tokens = 0;
  double destination_nodes = 1;
  // The busiest GPU's load over the mean (1: balanced).
  double imbalance() const { return mean_copies > 0 ? busiest_copies / mean_copies : 1.0; }
  // Rows of the busiest GPU's expert GEMMs: its copies, whole.
  int64_t busiest_rows() const;
  // Problems of its grouped GEMMs: its active experts, whole (at least 1).
  int64_t busiest_groups() const;
};

// Each expert's share of layer `layer`'s routed tokens (they sum to 1): equal under balanced routing; under
// zipf, 1 / (i + 1)^s for the expert of popularity rank i, the ranks a shuffle of the experts seeded by the
// seed and the layer (each layer has its own popular experts); from_file, the routing file's.
std::vector<double> expert_shares(const MoeSpec& moe, const ExpertParallel& ep, int64_t layer);

// Layer `layer`'s routing when each of the EP group's GPUs holds `rank_tokens` tokens: expert e sits on GPU
// e / (experts / ep.degree); with drops, an expert computes at most capacity_factor x its balanced share.
LayerRouting route_layer(const MoeSpec& moe, const ExpertParallel& ep, int64_t rank_tokens, int64_t layer);

// A step's routing over its first `layers` layers: the busiest GPU's load over the mean, on average and at its
// worst layer, and the share of the copies dropped.
struct RoutingSummary {
  double mean_imbalance = 1;
  double worst_imbalance = 1;
  int64_t worst_layer = 0;
  double dropped_fraction = 0;
};
RoutingSummary summarize_routing(const MoeSpec& moe, const ExpertParallel& ep, int64_t rank_tokens, int64_t layers);

}  // namespace tpsim::model
