// `tpsim shard layout`: the optimised (or anti-optimised) layout of an affinity file, with the
// objective of the contiguous, random and opposite-direction layouts beside it, as JSON.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "shard/layout.hpp"

namespace tpsim::shard {

struct LayoutRequest {
  int devices = 2;
  bool minimise = false;  // the anti-optimised layout
  bool raw = false;       // keep raw affinity units (default: each table scaled to unit mass)
  uint64_t seed = 1;      // random baselines use seeds seed, seed + 1, ...; restarts follow them
  int random_seeds = 16;
  // Extra optimiser starts from random layouts; the best is kept. Coordinate ascent from the contiguous
  // layout alone can stall (tests show a planted optimum it misses and a few restarts find).
  int restarts = 2;
};

struct LayoutReport {
  Layout layout;
  nlohmann::ordered_json json;
};

LayoutReport plan_layout(const AffinityTables& tables, const LayoutRequest& request);

}  // namespace tpsim::shard
