// Generated affinity tables for the shard tests: random, and with a planted block structure.
#pragma once

#include <random>

#include "shard/affinity.hpp"
#include "shard/layout.hpp"

namespace tpsim::test {

inline shard::AffinityTables random_tables(int layers, int groups, int neurons, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  shard::AffinityTables t{layers, groups, neurons, {}, {}};
  for (int i = 0; i < layers; ++i) {
    std::vector<double> up(static_cast<size_t>(groups * neurons)), down(static_cast<size_t>(groups * neurons));
    for (double& v : up) v = u(engine);
    for (double& v : down) v = u(engine);
    t.up.push_back(up);
    if (i + 1 < layers) t.down.push_back(down);
  }
  return t;
}

// Affinity 1 (plus small noise) between groups and neurons that `planted` puts on the same device, small
// noise elsewhere: the planted layout is the optimum (up to the noise).
inline shard::AffinityTables planted_tables(const shard::Layout& planted, int groups, int neurons, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> noise(0.0, 0.05);
  const int layers = static_cast<int>(planted.head_device.size());
  shard::AffinityTables t{layers, groups, neurons, {}, {}};
  for (int i = 0; i < layers; ++i) {
    std::vector<double> up(static_cast<size_t>(groups * neurons)), down(static_cast<size_t>(groups * neurons));
    for (int g = 0; g < groups; ++g) {
      for (int n = 0; n < neurons; ++n) {
        const bool together = planted.head_device[i][g] == planted.neuron_device[i][n];
        up[static_cast<size_t>(g * neurons + n)] = (together ? 1.0 : 0.0) + noise(engine);
        if (i + 1 < layers) {
          const bool next = planted.neuron_device[i][n] == planted.head_device[i + 1][g];
          down[static_cast<size_t>(n * groups + g)] = (next ? 1.0 : 0.0) + noise(engine);
        }
      }
    }
    t.up.push_back(up);
    if (i + 1 < layers) t.down.push_back(down);
  }
  return t;
}

}  // namespace tpsim::test
