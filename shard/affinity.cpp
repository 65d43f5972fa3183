// Affinity files: layout of the tensors, checks, normalisation.
#include "shard/affinity.hpp"

#include <cmath>
#include <numeric>

#include "base/input_error.hpp"
#include "shard/safetensors.hpp"

namespace tpsim::shard {
namespace {

int metadata_count(const SafetensorsFile& f, const std::string& key, const std::string& path) {
  const auto it = f.metadata.find(key);
  if (it == f.metadata.end()) throw InputError(path + ": metadata '" + key + "' is missing");
  try {
    const int value = std::stoi(it->second);
    if (value > 0) return value;
  } catch (const std::exception&) {
  }
  throw InputError(path + ": metadata '" + key + "' must be a positive integer, got '" + it->second + "'");
}

std::vector<double> checked_table(const SafetensorsFile& f, const std::string& name, int64_t rows, int64_t cols,
                                  const std::string& path) {
  const Tensor& t = f.at(name, path);
  if (t.shape != std::vector<int64_t>{rows, cols}) {
    std::string shape;
    for (int64_t d : t.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    throw InputError(path + ": tensor '" + name + "' has shape [" + shape + "], expected [" + std::to_string(rows) +
                     ", " + std::to_string(cols) + "]");
  }
  std::vector<double> out(t.values.begin(), t.values.end());
  for (size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i]) || out[i] < 0) {
      throw InputError(path + ": tensor '" + name + "' element " + std::to_string(i) +
                       " is not a finite non-negative affinity (" + std::to_string(out[i]) + ")");
    }
  }
  return out;
}

void scale_to_unit_mass(std::vector<double>& table) {
  const double mass = std::accumulate(table.begin(), table.end(), 0.0);
  if (mass > 0) {
    for (double& v : table) v /= mass;
  }
}

}  // namespace

AffinityTables read_affinity(const std::string& path) {
  const SafetensorsFile f = read_safetensors(path);
  AffinityTables t;
  t.layers = metadata_count(f, "layers", path);
  t.kv_groups = metadata_count(f, "kv_groups", path);
  t.neurons = metadata_count(f, "neurons", path);
  for (int i = 0; i < t.layers; ++i) {
    t.up.push_back(checked_table(f, "up." + std::to_string(i), t.kv_groups, t.neurons, path));
    if (i + 1 < t.layers) t.down.push_back(checked_table(f, "down." + std::to_string(i), t.neurons, t.kv_groups, path));
  }
  return t;
}

void write_affinity(const std::string& path, const AffinityTables& t) {
  SafetensorsFile f;
  f.metadata = {{"layers", std::to_string(t.layers)},
                {"kv_groups", std::to_string(t.kv_groups)},
                {"neurons", std::to_string(t.neurons)}};
  for (int i = 0; i < t.layers; ++i) {
    const auto& up = t.up[static_cast<size_t>(i)];
    f.tensors["up." + std::to_string(i)] = Tensor{{t.kv_groups, t.neurons}, std::vector<float>(up.begin(), up.end())};
    if (i + 1 < t.layers) {
      const auto& down = t.down[static_cast<size_t>(i)];
      f.tensors["down." + std::to_string(i)] =
          Tensor{{t.neurons, t.kv_groups}, std::vector<float>(down.begin(), down.end())};
    }
  }
  write_safetensors(path, f);
}

AffinityTables normalised(const AffinityTables& tables) {
  AffinityTables t = tables;
  for (auto& table : t.up) scale_to_unit_mass(table);
  for (auto& table : t.down) scale_to_unit_mass(table);
  return t;
}

}  // namespace tpsim::shard
