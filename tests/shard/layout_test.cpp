// The layout optimiser: exact steps, monotone sweeps, balance, planted structure recovered, and the
// ordering optimised >= random >= anti-optimised.
#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <numeric>
#include <tuple>

#include "base/input_error.hpp"
#include "shard/layout.hpp"
#include "shard/layout_report.hpp"
#include "shard_support.hpp"

using namespace tpsim::shard;
using tpsim::test::planted_tables;
using tpsim::test::random_tables;

namespace {

// Every labelled balanced placement of `items` over `devices`.
std::vector<std::vector<int>> balanced_placements(int items, int devices) {
  std::vector<std::vector<int>> out;
  std::vector<int> current(static_cast<size_t>(items)), count(static_cast<size_t>(devices), 0);
  std::function<void(int)> place = [&](int item) {
    if (item == items) {
      out.push_back(current);
      return;
    }
    for (int d = 0; d < devices; ++d) {
      if (count[static_cast<size_t>(d)] == items / devices) continue;
      ++count[static_cast<size_t>(d)];
      current[static_cast<size_t>(item)] = d;
      place(item + 1);
      --count[static_cast<size_t>(d)];
    }
  };
  place(0);
  return out;
}

void check_balanced(const Layout& l, const AffinityTables& t) {
  for (int i = 0; i < t.layers; ++i) {
    for (int d = 0; d < l.devices; ++d) {
      const auto& heads = l.head_device[static_cast<size_t>(i)];
      const auto& neurons = l.neuron_device[static_cast<size_t>(i)];
      CHECK(std::count(heads.begin(), heads.end(), d) == t.kv_groups / l.devices);
      CHECK(std::count(neurons.begin(), neurons.end(), d) == t.neurons / l.devices);
    }
  }
}

}  // namespace

TEST_CASE("the head step is the best of every balanced placement of a layer's KV groups") {
  for (const auto& [groups, devices] : std::vector<std::pair<int, int>>{{6, 2}, {6, 3}, {8, 4}}) {
    const AffinityTables t = random_tables(3, groups, 12, 5 + static_cast<uint64_t>(groups * devices));
    Layout l = random_layout(t, devices, 3);
    for (int layer = 0; layer < 3; ++layer) {
      double best = -1;
      for (const auto& placement : balanced_placements(groups, devices)) {
        Layout candidate = l;
        candidate.head_device[static_cast<size_t>(layer)] = placement;
        best = std::max(best, layout_objective(t, candidate));
      }
      Layout stepped = l;
      stepped.head_device[static_cast<size_t>(layer)] = best_heads(t, l, layer, 1.0);
      CHECK(layout_objective(t, stepped) == Approx(best).epsilon(1e-12));
    }
  }
}

TEST_CASE("the neuron step is the best of every balanced placement of a layer's neurons") {
  const AffinityTables t = random_tables(2, 4, 8, 17);
  for (int devices : {2, 4}) {
    const Layout l = random_layout(t, devices, 9);
    for (int layer = 0; layer < 2; ++layer) {
      double best = -1;
      for (const auto& placement : balanced_placements(8, devices)) {
        Layout candidate = l;
        candidate.neuron_device[static_cast<size_t>(layer)] = placement;
        best = std::max(best, layout_objective(t, candidate));
      }
      Layout stepped = l;
      stepped.neuron_device[static_cast<size_t>(layer)] = best_neurons(t, l, layer, 1.0);
      CHECK(layout_objective(t, stepped) == Approx(best).epsilon(1e-12));
    }
  }
}

TEST_CASE("sweeps never lower the objective, and every layout stays balanced") {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const AffinityTables t = random_tables(6, 8, 64, seed);
    for (int devices : {2, 4, 8}) {
      const OptimisedLayout o = optimise_layout(t, contiguous_layout(t, devices), false);
      REQUIRE_FALSE(o.history.empty());
      for (size_t k = 1; k < o.history.size(); ++k) CHECK(o.history[k] >= o.history[k - 1]);
      CHECK(o.objective == Approx(layout_objective(t, o.layout)));
      check_balanced(o.layout, t);
    }
  }
}

TEST_CASE("a planted block structure hidden under a random permutation is recovered") {
  // (layers, KV groups, neurons, devices): coordinate ascent from the contiguous start alone can stall
  // on such instances; the default restarts from random layouts find the planted optimum.
  for (const auto& [layers, groups, neurons, devices] :
       std::vector<std::tuple<int, int, int, int>>{{4, 8, 64, 4}, {8, 16, 256, 4}, {6, 8, 128, 2}, {3, 16, 64, 8}}) {
    AffinityTables shape{layers, groups, neurons, {}, {}};
    const Layout planted = random_layout(shape, devices, 2024 + static_cast<uint64_t>(groups));
    const AffinityTables t = planted_tables(planted, groups, neurons, 7);
    LayoutRequest request;
    request.devices = devices;
    request.raw = true;
    request.random_seeds = 0;
    const auto report = plan_layout(t, request);
    // The planted layout collects every unit-affinity edge; the optimiser must find as much.
    INFO(layers << " layers, " << groups << " groups, " << neurons << " neurons, " << devices << " devices");
    CHECK(report.json["objective"]["optimised"].get<double>() >= layout_objective(t, planted) - 1e-9);
  }
}

TEST_CASE("optimised beats every random layout, which beats the anti-optimised one, on planted instances") {
  AffinityTables shape{5, 8, 96, {}, {}};
  const Layout planted = random_layout(shape, 2, 99);
  const AffinityTables t = planted_tables(planted, 8, 96, 3);
  LayoutRequest request;
  request.devices = 2;
  request.random_seeds = 20;
  const auto report = plan_layout(t, request);
  const auto& objective = report.json["objective"];
  CHECK(objective["optimised"].get<double>() > objective["random"]["max"].get<double>());
  CHECK(objective["random"]["min"].get<double>() > objective["anti_optimised"].get<double>());
  CHECK(objective["optimised"].get<double>() >= objective["contiguous"].get<double>());
  // Unit mass per table: 5 up and 4 down edges, each at most 1.
  CHECK(objective["optimised"].get<double>() <= 9.0 + 1e-9);
  check_balanced(report.layout, t);
}

TEST_CASE("device counts that do not divide the groups or neurons are refused") {
  const AffinityTables t = random_tables(2, 8, 30, 1);
  CHECK_THROWS_WITH(contiguous_layout(t, 4), "--devices 4 must divide the 8 KV groups and the 30 neurons");
}
