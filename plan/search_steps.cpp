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
  const SimulateJob compute = [&](size_t index, bool, sim::SimulationCache&) {
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

namespace {

// The jobs left to simulate, by their least rank values (ties by candidate number), each marked once its first run
// gave its bound.
struct Pending {
  WorkerJob job;
  double bound = 0;
  bool refined = false;
};

void sort_pending(std::vector<Pending>& pending) {
  std::stable_sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) {
    return a.bound != b.bound ? a.bound < b.bound : a.job.index < b.job.index;
  });
}

// The top-th smallest of `values` (infinity where there are fewer).
double top_value(std::vector<double> values, size_t top) {
  if (values.size() < top) return std::numeric_limits<double>::infinity();
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(top - 1), values.end());
  return values[top - 1];
}

}  // namespace

BoundedCounts simulate_bounded(const std::vector<BoundedJob>& jobs, const BoundedSearch& search,
                               const WorkerOptions& options, const SimulateJob& simulate, const TakeJob& take,
                               WorkerCounts& counts) {
  // Small enough that the top rows' values tighten early, large enough that few workers wait behind a batch's longest
  // job (jobs' costs differ much and are not known before they run): at least the top rows' count. A setting, chosen
  // on the 70B plan (--top 10, -j 2 on 2 cores, 3 runs each): batches of 8 took 10.3-11.4 s, of 10 9.1-9.4 s, of 12
  // 9.1-10.2 s, with the same rows and as many candidates simulated. Not per worker: which candidates run does not
  // depend on -j.
  const size_t batch_size = std::max<size_t>(8, search.top);
  std::vector<Pending> pending;
  for (const BoundedJob& job : jobs) pending.push_back(Pending{job.job, job.bound, job.refined});
  sort_pending(pending);
  // A first run's answer puts its job back with the larger of its bounds; every answer goes to the caller too.
  std::map<size_t, Pending> sent;
  const TakeJob take_or_requeue = [&](size_t index, const nlohmann::ordered_json* numbers, const std::string& error) {
    if (numbers && numbers->contains(kFirstRunBound)) {
      Pending again = sent.at(index);
      again.bound = std::max(again.bound, (*numbers)[kFirstRunBound].get<double>());
      again.refined = true;
      pending.push_back(again);
    }
    take(index, numbers, error);
  };
  WorkerPool pool(options, simulate, jobs.size());
  for (;;) {
    const double kept = top_value(search.ranks(), search.top);
    std::vector<WorkerJob> batch;
    sent.clear();
    // Strictly above: a candidate whose row could tie the top-th value may rank before it by its number.
    size_t taken = 0;
    for (; taken < pending.size() && batch.size() < batch_size && !(pending[taken].bound > kept); ++taken) {
      WorkerJob job = pending[taken].job;
      job.first_run = search.refine && !pending[taken].refined;
      batch.push_back(job);
      sent[job.index] = pending[taken];
    }
    if (batch.empty()) break;
    pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(taken));
    pool.run(batch, take_or_requeue);
    sort_pending(pending);
  }
  const WorkerCounts done = pool.finish();
  counts.cache_hits += done.cache_hits;
  counts.cache_misses += done.cache_misses;
  counts.cache_saved_s += done.cache_saved_s;
  counts.crashes.insert(counts.crashes.end(), done.crashes.begin(), done.crashes.end());
  BoundedCounts left;
  left.bounded = static_cast<int64_t>(pending.size());
  left.after_first_run = std::count_if(pending.begin(), pending.end(), [](const Pending& p) { return p.refined; });
  return left;
}

}  // namespace tpsim::plan
