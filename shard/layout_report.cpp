// Baselines, restarts and the JSON of a layout.
#include "shard/layout_report.hpp"

#include <algorithm>
#include <numeric>

#include "base/input_error.hpp"
#include "base/limits.hpp"

namespace tpsim::shard {
namespace {

nlohmann::ordered_json devices_json(const Layout& l, int layer) {
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (int d = 0; d < l.devices; ++d) {
    std::vector<int> groups, neurons;
    const auto& heads = l.head_device[static_cast<size_t>(layer)];
    const auto& ns = l.neuron_device[static_cast<size_t>(layer)];
    for (size_t g = 0; g < heads.size(); ++g) {
      if (heads[g] == d) groups.push_back(static_cast<int>(g));
    }
    for (size_t n = 0; n < ns.size(); ++n) {
      if (ns[n] == d) neurons.push_back(static_cast<int>(n));
    }
    devices.push_back({{"kv_groups", groups}, {"neurons", neurons}});
  }
  return devices;
}

}  // namespace

LayoutReport plan_layout(const AffinityTables& raw_tables, const LayoutRequest& r) {
  if (r.random_seeds < 0 || r.restarts < 0 ||
      int64_t{r.random_seeds} + int64_t{r.restarts} > int64_t{model::kMaxLayoutSearches}) {
    throw InputError("--random-seeds " + std::to_string(r.random_seeds) + " and --restarts " +
                     std::to_string(r.restarts) + ": at most " + std::to_string(model::kMaxLayoutSearches) +
                     " random layouts and restarts together (docs/reliability.md); each is a search over every layer");
  }
  check_devices(raw_tables, r.devices);
  const AffinityTables tables = r.raw ? raw_tables : normalised(raw_tables);
  const Layout contiguous = contiguous_layout(tables, r.devices);
  std::vector<double> random;
  for (int s = 0; s < r.random_seeds; ++s) {
    random.push_back(layout_objective(tables, random_layout(tables, r.devices, r.seed + static_cast<uint64_t>(s))));
  }
  auto search = [&](bool minimise, int restarts) {
    // Maximising starts from the layer-wise co-clustering, minimising from the contiguous layout.
    constexpr int kStartsPerLayer = 2;
    const Layout first = minimise ? contiguous : layerwise_start(tables, r.devices, r.seed, kStartsPerLayer);
    OptimisedLayout best = optimise_layout(tables, first, minimise);
    for (int k = 0; k < restarts; ++k) {
      const Layout start = random_layout(tables, r.devices, r.seed + static_cast<uint64_t>(r.random_seeds + k));
      OptimisedLayout candidate = optimise_layout(tables, start, minimise);
      if (minimise ? candidate.objective < best.objective : candidate.objective > best.objective) best = candidate;
    }
    return best;
  };
  const OptimisedLayout chosen = search(r.minimise, r.restarts);
  const OptimisedLayout opposite = search(!r.minimise, 0);  // a reference point: one start

  LayoutReport report{chosen.layout, {}};
  nlohmann::ordered_json& j = report.json;
  j["devices"] = r.devices;
  j["layers"] = tables.layers;
  j["kv_groups"] = tables.kv_groups;
  j["neurons"] = tables.neurons;
  j["units"] = r.raw ? "raw" : "each table scaled to unit mass";
  j["direction"] = r.minimise ? "minimised (anti-optimised)" : "maximised";
  nlohmann::ordered_json objective;
  objective[r.minimise ? "anti_optimised" : "optimised"] = chosen.objective;
  objective[r.minimise ? "optimised" : "anti_optimised"] = opposite.objective;
  objective["contiguous"] = layout_objective(tables, contiguous);
  if (!random.empty()) {
    objective["random"] = {
        {"seeds", random.size()},
        {"first_seed", r.seed},
        {"mean", std::accumulate(random.begin(), random.end(), 0.0) / static_cast<double>(random.size())},
        {"min", *std::min_element(random.begin(), random.end())},
        {"max", *std::max_element(random.begin(), random.end())}};
  }
  j["objective"] = objective;
  j["sweeps"] = chosen.history;
  j["restarts"] = r.restarts;
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (int i = 0; i < tables.layers; ++i) layers.push_back({{"layer", i}, {"devices", devices_json(chosen.layout, i)}});
  j["layout"] = layers;
  return report;
}

}  // namespace tpsim::shard
