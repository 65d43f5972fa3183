// The steps a training plan's and a serving plan's search share: the pre-simulation checks of a candidate's scenario
// (the loader, the hardware, the memory estimate), pruning with the reasons counted, this shard's survivors (resumed
// rows taken from the journal), and the simulation of the rest in worker processes.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/scenario.hpp"
#include "plan/plan_workers.hpp"
#include "sim/cost/gpu_spec.hpp"
#include "sim/engine/runner/window_clock.hpp"
#include "sim/run/scenario_run.hpp"

namespace tpsim::plan {

// Whether (and why not) a candidate can run, without simulating it: empty reason when it can.
struct Verdict {
  std::string reason;  // divisibility | placement | memory | kv cache | unsupported
  std::string detail;
  double memory_bytes = 0;
  // A pass's loaded scenario, which the worker simulates without loading its text again.
  std::shared_ptr<const model::Scenario> scenario;
};

// The pruning reason of a scenario the loader refuses: divisibility (what does not split evenly) or unsupported.
std::string refusal_reason(const std::string& message);

// What every plan's search counts beside its rows.
struct SearchTotals {
  size_t candidates = 0;
  std::map<std::string, int64_t> pruned;                      // reason -> candidates
  std::map<std::string, std::map<std::string, int64_t>> why;  // reason -> message -> candidates
  std::vector<std::string> failures;                          // candidates whose simulation was refused
  int64_t cache_hits = 0, cache_misses = 0;
  double cache_saved_s = 0;             // wall seconds (not part of the deterministic outputs)
  int64_t bounded = 0;                  // survivors not simulated: their bound ranks them below the top rows
  int64_t bounded_after_first_run = 0;  // of those, the ones bounded by their first run (SearchSteps::rank_of_step)
};

// Loads a candidate's scenario text and makes the checks `tpsim run` makes before simulating it: the loader's
// (divisibility or unsupported), the hardware's (placement) and the memory estimate's; on a pass (empty reason) fills
// `scenario`, `gpu` and the verdict's memory per GPU, which the caller compares with what fits.
Verdict check_scenario(const std::string& text, const std::string& file, model::Scenario& scenario, sim::GpuSpec& gpu);

// How a search treats its candidates (each kind of plan's own functions).
template <typename Candidate, typename Row>
struct SearchSteps {
  std::function<Verdict(const Candidate&)> check;
  std::function<std::string(const Candidate&)> scenario_text;
  std::function<nlohmann::ordered_json(const Candidate&, const sim::ScenarioRun&)> numbers;  // a worker's
  std::function<Row(const Candidate&, const nlohmann::ordered_json&)> row;                   // the parent's
  // Bounding (optional): a lower bound on a candidate's rank value from its checked scenario, without simulating it
  // (nullopt: none), and a row's rank value (the smaller ranks first).
  std::function<std::optional<double>(const Candidate&, const model::Scenario&)> bound;
  std::function<double(const Row&)> rank;
  // Refinement (optional, with bounding): the rank value of a candidate's row whose step takes `step_s`, never
  // smaller for a longer step; given, a job first runs its step only as far as its first run at the back-to-back clock
  // where its window's clock takes more (sim::FirstRunProbe), whose least step then bounds it again.
  std::function<double(const Candidate&, const model::Scenario&, double step_s)> rank_of_step;
};

// Options every search shares (PlanOptions' part that the steps read).
struct SearchRun {
  const std::string& file;
  WorkerOptions workers;
  size_t shard_index = 0, shard_count = 1;
  const std::map<size_t, nlohmann::ordered_json>& done;
  const std::function<void(size_t, const nlohmann::ordered_json&)>& on_row;
  // Bounding: only the first `top` rows of the ranking must be exact, so a candidate whose bound is above the
  // top-th best rank value simulated so far is not simulated; 0: every survivor simulated.
  size_t top = 0;
};

// A job and the least rank value its row can have.
struct BoundedJob {
  WorkerJob job;
  double bound = 0;
  bool refined = false;  // `bound` takes its first run's (a job taken again runs whole)
};

// Each job's bound (`bound` of its candidate's number) computed in `options.jobs` worker processes; a job without one
// (nullopt, or its worker failed) is not in the map.
std::map<size_t, double> bound_in_workers(const std::vector<WorkerJob>& jobs, WorkerOptions options,
                                          const std::function<std::optional<double>(size_t)>& bound);

// What a bounded search keeps: the top `top` rows by `ranks()` (the rank values of the rows so far), and whether its
// jobs run first as far as their first runs (SearchSteps::rank_of_step).
struct BoundedSearch {
  size_t top = 0;
  std::function<std::vector<double>()> ranks;
  bool refine = false;
};

// How many jobs a bounded search left out, and how many of those after their first runs.
struct BoundedCounts {
  int64_t bounded = 0, after_first_run = 0;
};

// Simulates `jobs` in ascending order of their bounds (ties by candidate number), in batches of a fixed size (the top
// rows' count, at least 8) so that which candidates are simulated does not depend on the workers: before each batch,
// every job whose bound is above the top-th smallest rank value so far is left out, and since the rest have larger
// bounds, the search ends. Refining, a job's first time in a batch is a first-run job: one that answers with a bound
// goes back among the rest with the larger of its bounds, and runs whole if it is taken again.
BoundedCounts simulate_bounded(const std::vector<BoundedJob>& jobs, const BoundedSearch& search,
                               const WorkerOptions& options, const SimulateJob& simulate, const TakeJob& take,
                               WorkerCounts& counts);

void add_worker_counts(const WorkerCounts& counts, SearchTotals& totals);

// Prunes `all`, takes this shard's survivors (rows of those done from `run.done`), simulates the rest in workers;
// the rows in no particular order (the caller ranks them).
template <typename Candidate, typename Row>
std::vector<Row> search_candidates(const std::vector<Candidate>& all, const SearchSteps<Candidate, Row>& steps,
                                   const SearchRun& run, SearchTotals& totals) {
  totals.candidates = all.size();
  std::vector<const Candidate*> kept;
  std::map<size_t, std::shared_ptr<const model::Scenario>> loaded;  // candidate -> its scenario
  for (const Candidate& c : all) {
    Verdict v = steps.check(c);
    if (v.reason.empty()) {
      kept.push_back(&c);
      loaded[c.index] = std::move(v.scenario);
      continue;
    }
    ++totals.pruned[v.reason];
    ++totals.why[v.reason][v.detail];
  }
  std::vector<Row> rows;
  std::map<size_t, const Candidate*> todo;
  std::vector<WorkerJob> jobs;
  std::map<size_t, double> first_run_bounds;  // resumed: the bounds earlier first runs gave
  for (size_t i = 0; i < kept.size(); ++i) {
    if (i % run.shard_count != run.shard_index) continue;
    const Candidate& c = *kept[i];
    if (const auto done = run.done.find(c.index); done != run.done.end()) {
      if (!done->second.contains(kFirstRunBound)) {
        rows.push_back(steps.row(c, done->second));
        continue;
      }
      first_run_bounds[c.index] = done->second[kFirstRunBound].template get<double>();
    }
    todo[c.index] = &c;
    jobs.push_back(WorkerJob{c.index, c.layout.program_key()});
  }
  const SimulateJob simulate = [&](size_t index, bool first_run, sim::SimulationCache& cache) {
    const Candidate& c = *todo.at(index);
    const std::shared_ptr<const model::Scenario>& checked = loaded.at(index);
    model::Scenario parsed;
    if (!checked) parsed = model::parse_scenario(steps.scenario_text(c), run.file);
    const model::Scenario& s = checked ? *checked : parsed;
    cache.set_context(s.topology.value + "/" + std::to_string(s.nodes));
    std::optional<sim::FirstRunProbe> probe;
    if (first_run) probe.emplace();
    try {
      return steps.numbers(c, sim::run_scenario(s));
    } catch (const sim::FirstRunBound& bound) {
      nlohmann::ordered_json answer;
      answer[kFirstRunBound] = steps.rank_of_step(c, s, bound.step_s);
      return answer;
    }
  };
  const TakeJob take = [&](size_t index, const nlohmann::ordered_json* numbers, const std::string& error) {
    const Candidate& c = *todo.at(index);
    if (numbers && numbers->contains(kFirstRunBound)) {  // journaled; simulate_bounded takes it back among its jobs
      if (run.on_row) run.on_row(index, *numbers);
      return;
    }
    if (!numbers) {
      totals.failures.push_back("candidate " + std::to_string(index) + " (" + describe(c.layout) + "): " + error);
      return;
    }
    rows.push_back(steps.row(c, *numbers));
    if (run.on_row) run.on_row(index, *numbers);
  };
  // Unbounded, a resumed first run's job runs whole.
  if (run.top == 0 || !steps.bound || !steps.rank || jobs.empty()) {
    add_worker_counts(simulate_in_workers(jobs, run.workers, simulate, take), totals);
    return rows;
  }
  const std::map<size_t, double> bounds = bound_in_workers(jobs, run.workers, [&](size_t index) {
    const std::shared_ptr<const model::Scenario>& checked = loaded.at(index);
    return checked ? steps.bound(*todo.at(index), *checked) : std::nullopt;
  });
  std::vector<BoundedJob> bounded;
  for (const WorkerJob& job : jobs) {
    const auto bound = bounds.find(job.index);
    BoundedJob b{job, bound != bounds.end() ? bound->second : -std::numeric_limits<double>::infinity(), false};
    if (const auto first = first_run_bounds.find(job.index); first != first_run_bounds.end()) {
      b.bound = std::max(b.bound, first->second);
      b.refined = true;
    }
    bounded.push_back(b);
  }
  BoundedSearch search;
  search.top = run.top;
  search.ranks = [&] {
    std::vector<double> values;
    for (const Row& row : rows) values.push_back(steps.rank(row));
    return values;
  };
  // A full run after a first run takes the first from the worker's program cache: without it, it runs it again.
  search.refine = steps.rank_of_step && run.workers.cache;
  WorkerCounts counts;
  const BoundedCounts left = simulate_bounded(bounded, search, run.workers, simulate, take, counts);
  totals.bounded = left.bounded;
  totals.bounded_after_first_run = left.after_first_run;
  add_worker_counts(counts, totals);
  return rows;
}

}  // namespace tpsim::plan
