// DTP layouts: which KV groups and FFN neurons of each layer sit on which device, the co-located
// affinity they score, and the coordinate-ascent optimiser over the layer chain. Both of its steps
// are exact balanced assignments (balanced_assignment.hpp): given the neighbouring layers, a layer's
// neurons (and, as much, its KV groups) contribute independently to the objective, so the best
// balanced placement of one layer's neurons, or of its groups, is a transportation problem. The
// objective therefore never decreases over a sweep; the optimiser stops when a sweep gains nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "shard/affinity.hpp"

namespace tpsim::shard {

struct Layout {
  int devices = 1;
  std::vector<std::vector<int>> head_device;    // [layer][kv group] -> device
  std::vector<std::vector<int>> neuron_device;  // [layer][neuron] -> device
};

// InputError unless `devices` divides both the KV groups and the neurons.
void check_devices(const AffinityTables& tables, int devices);

// Device d holds groups and neurons [d n / D, (d + 1) n / D): plain TP sharding.
Layout contiguous_layout(const AffinityTables& tables, int devices);
// A balanced layout drawn uniformly with a seed (the same on every platform).
Layout random_layout(const AffinityTables& tables, int devices, uint64_t seed);

// Sum over layers of the co-located up affinity plus the co-located down affinity.
double layout_objective(const AffinityTables& tables, const Layout& layout);

// The steps (sign +1 maximises, -1 minimises): the best balanced devices of one layer's neurons given
// the KV groups of this layer and the next, and of one layer's groups given the neurons of this
// layer and the previous one.
std::vector<int> best_neurons(const AffinityTables& tables, const Layout& layout, int layer, double sign);
std::vector<int> best_heads(const AffinityTables& tables, const Layout& layout, int layer, double sign);

// A move the single-layer steps cannot make: relabel the devices of everything after `cut` (cut 2i lies
// between layer i's groups and its neurons, cut 2i + 1 between its neurons and layer i + 1's groups)
// by the permutation that maximises the affinity across the cut. Every other edge is unchanged (its
// two ends are relabelled alike), so this is exact for the move; it mends layers whose labels
// disagree, where coordinate ascent alone stalls.
void relabel_suffix(const AffinityTables& tables, Layout& layout, int cut, double sign);

// A start for maximising: each layer's groups and neurons co-clustered on its up edge alone (best of
// `starts_per_layer` coordinate ascents, the first from the contiguous layout), then relabelled so
// that the layers agree across every cut.
Layout layerwise_start(const AffinityTables& tables, int devices, uint64_t seed, int starts_per_layer);

struct OptimisedLayout {
  Layout layout;
  double objective = 0;
  std::vector<double> history;  // the objective after the initial neuron step and after each sweep
};

// Coordinate ascent from `start`'s KV groups: neurons of every layer first, then sweeps of (groups,
// neurons) per layer followed by a relabelling of every cut, until a sweep no longer improves (or
// max_sweeps).
OptimisedLayout optimise_layout(const AffinityTables& tables, const Layout& start, bool minimise, int max_sweeps = 100);

}  // namespace tpsim::shard
