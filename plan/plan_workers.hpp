// Simulation of a plan's candidates in worker processes (training and serving plans alike): candidates that share
// programs go to the same worker, next to each other, so that its program cache (sim/engine/simulation_cache.hpp)
// reuses them; each worker sends one JSON line per candidate, then its cache's counts.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/engine/simulation_cache.hpp"

namespace tpsim::plan {

struct WorkerJob {
  size_t index = 0;         // the candidate's number
  std::string program_key;  // jobs with the same key share programs (Layout::program_key)
  bool first_run = false;   // only a lower bound from the step's first run is wanted (SimulateJob)
};

struct WorkerOptions {
  int jobs = 1;
  bool cache = true;
  bool progress = false;  // a progress line on stderr
  bool forks = true;      // the jobs fork simulations (the worker hands its freed heap back after each job)
};

// What the workers report beside the rows.
struct WorkerCounts {
  int64_t cache_hits = 0, cache_misses = 0;
  double cache_saved_s = 0;
  std::vector<std::string> crashes;  // workers that did not exit cleanly
};

// Runs in a worker: the candidate's numbers as JSON (throws to report the candidate refused); with `first_run`, what
// the job's first run tells (a lower bound) where the run would go on past it.
using SimulateJob = std::function<nlohmann::ordered_json(size_t index, bool first_run, sim::SimulationCache& cache)>;
// The key of a first-run job's answer (a SimulateJob's numbers): the least rank value its first run allows.
inline constexpr const char* kFirstRunBound = "first_run_bound";

// Runs in the parent for each candidate, in the order the workers finish them: its numbers, or the refusal's text.
using TakeJob = std::function<void(size_t index, const nlohmann::ordered_json* numbers, const std::string& error)>;

WorkerCounts simulate_in_workers(const std::vector<WorkerJob>& jobs, const WorkerOptions& options,
                                 const SimulateJob& simulate, const TakeJob& take);

class ProgressLine;

// Workers forked once and fed jobs in batches, each keeping its program cache from batch to batch (a search that
// decides each batch from the rows of the batches before it). A job goes to the worker that took its program key
// first, unless that worker already holds its share of the batch (then to the least loaded one, which takes the key
// if it is new); `run` returns once every job of the batch is taken.
class WorkerPool {
 public:
  // `total`: the jobs over every batch (the progress line's count; at most that many workers are forked).
  WorkerPool(const WorkerOptions& options, const SimulateJob& simulate, size_t total);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  void run(const std::vector<WorkerJob>& batch, const TakeJob& take);
  // Runs `jobs` handed out one at a time, each to the next worker that is free (no program keys: jobs of uneven cost
  // that share nothing); returns once every job is taken.
  void run_each(const std::vector<WorkerJob>& jobs, const TakeJob& take);
  // Ends the workers and returns their counts (then the pool is closed).
  WorkerCounts finish();

 private:
  struct Member;
  // Takes the workers' lines until `done`; `took` runs for a worker each time it sent a job's line.
  void drain(const TakeJob& take, const std::function<bool()>& done, const std::function<void(Member&)>& took = {});
  void send(Member& m, const std::string& commands, size_t jobs);
  bool idle() const;  // no job sent and not yet taken
  WorkerOptions options_;
  std::vector<Member> members_;
  std::map<std::string, size_t> owner_;  // program key -> worker
  WorkerCounts counts_;
  std::unique_ptr<ProgressLine> progress_;
  bool finished_ = false;
  void (*sigpipe_)(int) = nullptr;  // SIGPIPE's handler before the pool
};

}  // namespace tpsim::plan
