// The pre-simulation checks of a candidate's scenario and the counts a plan's search keeps.
#include "plan/search_steps.hpp"

#include <algorithm>
#include <limits>

#include "base/input_error.hpp"
#include "input/gpu_reader.hpp"
#include "plan/memory_estimate.hpp"

namespace tpsim::plan {

std::string refusal_reason(const std::string& message) {
  for (const char* word : {"divide", "split", "multiple of", "groups of", "evenly"}) {
    if (message.find(word) != std::string::npos) return "divisibility";
  }
  return "unsupported";
}

Verdict check_scenario(const std::string& text, const std::string& file, model::Scenario& scenario, sim::GpuSpec& gpu) {
  Verdict v;
  try {
    scenario = model::parse_scenario(text, file);
  } catch (const InputError& error) {
    v.reason = refusal_reason(error.detail());
    v.detail = error.detail();
    return v;
  }
  gpu = sim::resolve_gpu(scenario);
  try {
    sim::check_hardware(scenario, gpu);
  } catch (const InputError& error) {
    v.reason = "placement";
    v.detail = error.detail();
    return v;
  }
  try {
    v.memory_bytes = sim::estimate_memory(scenario, scenario.variants.front(), gpu).device_bytes();
  } catch (const InputError& error) {
    v.reason = refusal_reason(error.detail());
    v.detail = error.detail();
  }
  return v;
}

void add_worker_counts(const WorkerCounts& counts, SearchTotals& totals) {
  totals.cache_hits += counts.cache_hits;
  totals.cache_misses += counts.cache_misses;
  totals.cache_saved_s += counts.cache_saved_s;
  totals.failures.insert(totals.failures.end(), counts.crashes.begin(), counts.crashes.end());
}

std::map<size_t, double> bound_in_workers(const std::vector<WorkerJob>& jobs, WorkerOptions options,
                                          const std::function<std::optional<double>(size_t)>& bound) {
  using Json = nlohmann::ordered_json;
  // Handed out one at a time to the first free worker (bounds differ much in cost), no program cache, no progress line.
  options.cache = false;
  options.progress = false;
  options.forks = false;
  std::map<size_t, double> bounds;
  const SimulateJob compute = [&](size_t index, sim::SimulationCache&) {
    const std::optional<double> b = bound(index);
    Json j;
    j["bound"] = b ? Json(*b) : Json(nullptr);
    return j;
  };
  const TakeJob take = [&](size_t index, const Json* numbers, const std::string&) {
    if (numbers && (*numbers)["bound"].is_number()) bounds[index] = (*numbers)["bound"].get<double>();
  };
  if (jobs.empty()) return bounds;
  WorkerPool pool(options, compute, jobs.size());
  pool.run_each(jobs, take);
  pool.finish();
  return bounds;
}

int64_t simulate_bounded(std::vector<BoundedJob> jobs, size_t top, const WorkerOptions& options,
                         const SimulateJob& simulate, const TakeJob& take,
                         const std::function<std::vector<double>()>& ranks, WorkerCounts& counts) {
  // Small enough that the top rows' values tighten early, large enough to keep a few workers busy.
  constexpr size_t kBatch = 8;
  std::stable_sort(jobs.begin(), jobs.end(), [](const BoundedJob& a, const BoundedJob& b) {
    return a.bound != b.bound ? a.bound < b.bound : a.job.index < b.job.index;
  });
  WorkerPool pool(options, simulate, jobs.size());
  size_t next = 0;
  while (next < jobs.size()) {
    std::vector<double> values = ranks();
    double kept = std::numeric_limits<double>::infinity();
    if (values.size() >= top) {
      std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(top - 1), values.end());
      kept = values[top - 1];
    }
    std::vector<WorkerJob> batch;
    // Strictly above: a candidate whose row could tie the top-th value may rank before it by its number.
    for (; next < jobs.size() && batch.size() < kBatch && !(jobs[next].bound > kept); ++next) {
      batch.push_back(jobs[next].job);
    }
    if (batch.empty()) break;
    pool.run(batch, take);
  }
  const WorkerCounts done = pool.finish();
  counts.cache_hits += done.cache_hits;
  counts.cache_misses += done.cache_misses;
  counts.cache_saved_s += done.cache_saved_s;
  counts.crashes.insert(counts.crashes.end(), done.crashes.begin(), done.crashes.end());
  return static_cast<int64_t>(jobs.size() - next);
}

}  // namespace tpsim::plan
