// Objective, baselines and the coordinate-ascent optimiser.
#include "shard/layout.hpp"

#include <cmath>
#include <random>

#include "base/input_error.hpp"
#include "shard/balanced_assignment.hpp"

namespace tpsim::shard {
namespace {

std::vector<int> contiguous(int items, int devices) {
  std::vector<int> out(static_cast<size_t>(items));
  for (int i = 0; i < items; ++i) out[static_cast<size_t>(i)] = i / (items / devices);
  return out;
}

// Fisher-Yates with the raw 64-bit engine (std::shuffle's draws differ between standard libraries).
std::vector<int> shuffled(int items, int devices, std::mt19937_64& engine) {
  std::vector<int> out = contiguous(items, devices);
  for (int i = items - 1; i > 0; --i)
    std::swap(out[static_cast<size_t>(i)], out[engine() % static_cast<uint64_t>(i + 1)]);
  return out;
}

}  // namespace

void check_devices(const AffinityTables& t, int devices) {
  if (devices < 1 || t.kv_groups % devices != 0 || t.neurons % devices != 0) {
    throw InputError("--devices " + std::to_string(devices) + " must divide the " + std::to_string(t.kv_groups) +
                     " KV groups and the " + std::to_string(t.neurons) + " neurons");
  }
}

Layout contiguous_layout(const AffinityTables& t, int devices) {
  check_devices(t, devices);
  Layout l;
  l.devices = devices;
  l.head_device.assign(static_cast<size_t>(t.layers), contiguous(t.kv_groups, devices));
  l.neuron_device.assign(static_cast<size_t>(t.layers), contiguous(t.neurons, devices));
  return l;
}

Layout random_layout(const AffinityTables& t, int devices, uint64_t seed) {
  check_devices(t, devices);
  std::mt19937_64 engine(seed);
  Layout l;
  l.devices = devices;
  for (int i = 0; i < t.layers; ++i) {
    l.head_device.push_back(shuffled(t.kv_groups, devices, engine));
    l.neuron_device.push_back(shuffled(t.neurons, devices, engine));
  }
  return l;
}

double layout_objective(const AffinityTables& t, const Layout& l) {
  double total = 0;
  for (int i = 0; i < t.layers; ++i) {
    const auto& heads = l.head_device[static_cast<size_t>(i)];
    const auto& neurons = l.neuron_device[static_cast<size_t>(i)];
    for (int n = 0; n < t.neurons; ++n) {
      const int d = neurons[static_cast<size_t>(n)];
      for (int g = 0; g < t.kv_groups; ++g) {
        if (heads[static_cast<size_t>(g)] == d) total += t.up_at(i, g, n);
        if (i + 1 < t.layers && l.head_device[static_cast<size_t>(i + 1)][static_cast<size_t>(g)] == d) {
          total += t.down_at(i, n, g);
        }
      }
    }
  }
  return total;
}

std::vector<int> best_neurons(const AffinityTables& t, const Layout& l, int layer, double sign) {
  const int D = l.devices;
  std::vector<double> gain(static_cast<size_t>(t.neurons) * static_cast<size_t>(D), 0.0);
  const auto& heads = l.head_device[static_cast<size_t>(layer)];
  const bool has_next = layer + 1 < t.layers;
  for (int n = 0; n < t.neurons; ++n) {
    double* row = &gain[static_cast<size_t>(n) * static_cast<size_t>(D)];
    for (int g = 0; g < t.kv_groups; ++g) {
      row[heads[static_cast<size_t>(g)]] += sign * t.up_at(layer, g, n);
      if (has_next)
        row[l.head_device[static_cast<size_t>(layer + 1)][static_cast<size_t>(g)]] += sign * t.down_at(layer, n, g);
    }
  }
  return balanced_assignment(gain, t.neurons, D);
}

std::vector<int> best_heads(const AffinityTables& t, const Layout& l, int layer, double sign) {
  const int D = l.devices;
  std::vector<double> gain(static_cast<size_t>(t.kv_groups) * static_cast<size_t>(D), 0.0);
  const auto& neurons = l.neuron_device[static_cast<size_t>(layer)];
  for (int g = 0; g < t.kv_groups; ++g) {
    double* row = &gain[static_cast<size_t>(g) * static_cast<size_t>(D)];
    for (int n = 0; n < t.neurons; ++n) {
      row[neurons[static_cast<size_t>(n)]] += sign * t.up_at(layer, g, n);
      if (layer > 0) {
        row[l.neuron_device[static_cast<size_t>(layer - 1)][static_cast<size_t>(n)]] +=
            sign * t.down_at(layer - 1, n, g);
      }
    }
  }
  return balanced_assignment(gain, t.kv_groups, D);
}

void relabel_suffix(const AffinityTables& t, Layout& l, int cut, double sign) {
  const int D = l.devices;
  const int layer = cut / 2;
  const bool up_edge = cut % 2 == 0;  // groups of `layer` | its neurons; else its neurons | next groups
  // weight[b * D + a]: affinity across the cut between label a before it and label b after it.
  std::vector<double> weight(static_cast<size_t>(D * D), 0.0);
  const auto& heads = l.head_device[static_cast<size_t>(layer)];
  const auto& neurons = l.neuron_device[static_cast<size_t>(layer)];
  for (int n = 0; n < t.neurons; ++n) {
    for (int g = 0; g < t.kv_groups; ++g) {
      if (up_edge) {
        weight[static_cast<size_t>(neurons[static_cast<size_t>(n)] * D + heads[static_cast<size_t>(g)])] +=
            sign * t.up_at(layer, g, n);
      } else {
        const int next = l.head_device[static_cast<size_t>(layer + 1)][static_cast<size_t>(g)];
        weight[static_cast<size_t>(next * D + neurons[static_cast<size_t>(n)])] += sign * t.down_at(layer, n, g);
      }
    }
  }
  // Label b after the cut becomes relabel[b]: an assignment of D labels to D labels.
  const std::vector<int> relabel = balanced_assignment(weight, D, D);
  auto apply = [&relabel](std::vector<int>& devices) {
    for (int& d : devices) d = relabel[static_cast<size_t>(d)];
  };
  if (up_edge) apply(l.neuron_device[static_cast<size_t>(layer)]);
  for (int i = layer + 1; i < t.layers; ++i) {
    apply(l.head_device[static_cast<size_t>(i)]);
    apply(l.neuron_device[static_cast<size_t>(i)]);
  }
}

Layout layerwise_start(const AffinityTables& t, int devices, uint64_t seed, int starts_per_layer) {
  // Each layer's up edge alone (a bipartite co-clustering of its groups and neurons), from the
  // contiguous placement and from random ones, then the layers' labels aligned across the cuts.
  AffinityTables single{1, t.kv_groups, t.neurons, {}, {}};
  Layout out = contiguous_layout(t, devices);
  for (int i = 0; i < t.layers; ++i) {
    single.up = {t.up[static_cast<size_t>(i)]};
    double best = -1;
    for (int s = 0; s < starts_per_layer; ++s) {
      Layout l = s == 0 ? contiguous_layout(single, devices)
                        : random_layout(single, devices, seed + static_cast<uint64_t>(i * starts_per_layer + s));
      const OptimisedLayout o = optimise_layout(single, l, false);
      if (o.objective > best) {
        best = o.objective;
        out.head_device[static_cast<size_t>(i)] = o.layout.head_device[0];
        out.neuron_device[static_cast<size_t>(i)] = o.layout.neuron_device[0];
      }
    }
  }
  for (int cut = 0; cut + 1 < 2 * t.layers; ++cut) relabel_suffix(t, out, cut, 1.0);
  return out;
}

OptimisedLayout optimise_layout(const AffinityTables& t, const Layout& start, bool minimise, int max_sweeps) {
  const double sign = minimise ? -1.0 : 1.0;
  OptimisedLayout out{start, 0, {}};
  Layout& l = out.layout;
  for (int i = 0; i < t.layers; ++i) l.neuron_device[static_cast<size_t>(i)] = best_neurons(t, l, i, sign);
  double best = sign * layout_objective(t, l);
  out.history.push_back(sign * best);
  for (int sweep = 0; sweep < max_sweeps; ++sweep) {
    Layout candidate = l;
    for (int i = 0; i < t.layers; ++i) {
      candidate.head_device[static_cast<size_t>(i)] = best_heads(t, candidate, i, sign);
      candidate.neuron_device[static_cast<size_t>(i)] = best_neurons(t, candidate, i, sign);
    }
    for (int cut = 0; cut + 1 < 2 * t.layers; ++cut) relabel_suffix(t, candidate, cut, sign);
    const double value = sign * layout_objective(t, candidate);
    if (value <= best + 1e-12 * (1 + std::abs(best))) break;  // each step is optimal: no gain, no sweep
    best = value;
    l = std::move(candidate);
    out.history.push_back(sign * best);
  }
  out.objective = sign * best;
  return out;
}

}  // namespace tpsim::shard
