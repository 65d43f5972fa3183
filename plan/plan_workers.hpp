// Simulation of a plan's candidates in worker processes (training and serving plans alike): candidates that share
// programs go to the same worker, next to each other, so that its program cache (sim/engine/simulation_cache.hpp)
// reuses them; each worker sends one JSON line per candidate, then its cache's counts.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/engine/simulation_cache.hpp"

namespace tpsim::plan {

struct WorkerJob {
  size_t index = 0;         // the candidate's number
  std::string program_key;  // jobs with the same key share programs (Layout::program_key)
};

struct WorkerOptions {
  int jobs = 1;
  bool cache = true;
  bool progress = false;  // a progress line on stderr
};

// What the workers report beside the rows.
struct WorkerCounts {
  int64_t cache_hits = 0, cache_misses = 0;
  double cache_saved_s = 0;
  std::vector<std::string> crashes;  // workers that did not exit cleanly
};

// Runs in a worker: the candidate's numbers as JSON (throws to report the candidate refused).
using SimulateJob = std::function<nlohmann::ordered_json(size_t index, sim::SimulationCache& cache)>;
// Runs in the parent for each candidate, in the order the workers finish them: its numbers, or the refusal's text.
using TakeJob = std::function<void(size_t index, const nlohmann::ordered_json* numbers, const std::string& error)>;

WorkerCounts simulate_in_workers(const std::vector<WorkerJob>& jobs, const WorkerOptions& options,
                                 const SimulateJob& simulate, const TakeJob& take);

}  // namespace tpsim::plan
