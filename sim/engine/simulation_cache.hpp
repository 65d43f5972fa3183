// Identical programs simulated once: while a SimulationCache is installed (a planner searching layouts), simulate()
// (isolated_run.hpp) looks each program up by a hash of its content (every op's fields and dependencies, the TP
// degree, the engine's launch costs, the GPU, profile and fabric the cost model holds, and a context string the
// installer sets to what else the cost model was built from) and reuses the timeline of an earlier identical program.
// Skewed runs and --no-symmetry runs are never cached. Timelines are kept up to a byte budget, oldest dropped first,
// their spans in memory the simulations' forked children do not inherit (base/unforked_buffer.hpp), and without their
// communication plans (a hit's are planned again: kept, they filled the heap that every later fork copies).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "base/unforked_buffer.hpp"
#include "sim/engine/engine.hpp"

namespace tpsim::sim {

struct SimulationCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  double saved_s = 0;  // wall seconds the hits' first simulations took
};

class SimulationCache {
 public:
  explicit SimulationCache(int64_t budget_bytes = int64_t{512} << 20) : budget_bytes_(budget_bytes) {}
  // Installs this cache for simulate() until it is destroyed (one at a time).
  void install();
  ~SimulationCache();
  // What the cost model was built from beyond what the cache hashes itself (e.g. the candidate's hardware text).
  void set_context(std::string context) { context_ = std::move(context); }

  using Key = std::pair<uint64_t, uint64_t>;
  Key key(const model::LayerGraph& graph, const CostModel& cost, const EngineOptions& options) const;
  // A copy of the timeline stored under `key` (its plans null), if any.
  std::optional<Timeline> find(const Key& key);
  void store(const Key& key, const Timeline& timeline, double wall_s);
  const SimulationCacheStats& stats() const { return stats_; }

 private:
  // A timeline, its spans apart.
  struct Entry {
    UnforkedBuffer spans;
    size_t span_count = 0;
    Timeline rest;  // without spans or plans (simulate() makes the plans of a hit again)
    double wall_s = 0;
  };
  int64_t budget_bytes_;
  int64_t held_bytes_ = 0;
  std::string context_;
  std::map<Key, Entry> entries_;
  std::deque<Key> order_;
  SimulationCacheStats stats_;
  bool installed_ = false;
};

// The installed cache, or null; and whether these options may be cached (no skew, one member).
SimulationCache* active_simulation_cache();
bool cacheable(const EngineOptions& options);

}  // namespace tpsim::sim
