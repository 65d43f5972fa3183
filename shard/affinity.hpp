// The affinity tables the layout optimiser maximises (docs/shard.md, "Layout"): per layer i an up
// table up[i][g, n] (damage to FFN neuron n of layer i when KV group g's contribution is missing) and
// a down table down[i][n, g'] (neuron n's contribution to KV group g' of layer i + 1), for layers
// 0..L-1 and 0..L-2. Stored as safetensors: float32 `up.{i}` [G, I], `down.{i}` [I, G], metadata
// `layers`, `kv_groups`, `neurons`.
#pragma once

#include <string>
#include <vector>

namespace tpsim::shard {

struct AffinityTables {
  int layers = 0;
  int kv_groups = 0;
  int neurons = 0;
  std::vector<std::vector<double>> up;    // [layers] of G x I, row-major
  std::vector<std::vector<double>> down;  // [layers - 1] of I x G, row-major

  double up_at(int layer, int group, int neuron) const {
    return up[static_cast<size_t>(layer)]
             [static_cast<size_t>(group) * static_cast<size_t>(neurons) + static_cast<size_t>(neuron)];
  }
  double down_at(int layer, int neuron, int group) const {
    return down[static_cast<size_t>(layer)]
               [static_cast<size_t>(neuron) * static_cast<size_t>(kv_groups) + static_cast<size_t>(group)];
  }
};

// Reads and checks an affinity file: every tensor present with its shape, no NaN, infinity or
// negative value; throws InputError naming the file and the tensor.
AffinityTables read_affinity(const std::string& path);
void write_affinity(const std::string& path, const AffinityTables& tables);

// Each layer's up and down tables scaled to unit mass (a table of zeros stays zero), so that every
// edge of the chain weighs the same in the objective.
AffinityTables normalised(const AffinityTables& tables);

}  // namespace tpsim::shard
