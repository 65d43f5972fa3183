// The search of a plan: enumerate the layouts, prune what cannot run before simulating (divisibility, placement,
// memory by the closed-form estimate), simulate the rest in worker processes with identical programs simulated once
// (sim/simulation_cache.hpp), and rank them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/enum_names.hpp"
#include "input/plan_file.hpp"
#include "plan/plan_space.hpp"
#include "plan/search_steps.hpp"

namespace tpsim::plan {

// What a ranked row measures, and where each number came from.
struct PlanRow {
  size_t index = 0;
  Layout layout;
  double time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;
  double memory_bytes = 0;  // per GPU, the stage that needs the most
  double bubble_fraction = 0;
  double compute_s = 0;
  double exposed_tp_s = 0, exposed_pp_s = 0, exposed_dp_s = 0, exposed_ep_s = 0;
  std::string bound;        // what the step waits on most beyond compute: bubble, tp, pp, dp or ep communication
  std::string simulated;    // what was simulated
  std::string closed_form;  // what came from a closed form
};

enum class RankBy { kTime, kTokensPerGpu, kMfu };
inline constexpr EnumName<RankBy> kRankByNames[] = {
    {RankBy::kTime, "time"},
    {RankBy::kTokensPerGpu, "tokens"},
    {RankBy::kMfu, "mfu"},
};
RankBy rank_by_named(const std::string& name);  // time | tokens | mfu; InputError otherwise

struct PlanOptions {
  int jobs = 1;
  bool cache = true;
  bool progress = false;   // a progress line on stderr
  size_t shard_index = 0;  // simulate only survivors whose position mod shard_count is shard_index
  size_t shard_count = 1;
  RankBy rank_by = RankBy::kTime;
  // Resuming: rows already simulated (a journal's), by candidate number, not simulated again; and a callback for each
  // row simulated now (to journal it), both as row_numbers writes them, or a first run's bound as a worker answers it
  // (`first_run_bound`, search_steps.hpp: resumed, the candidate's bound, not its row).
  std::map<size_t, nlohmann::ordered_json> done;
  std::function<void(size_t index, const nlohmann::ordered_json& numbers)> on_row;
  // Only the first `top` rows must be exact: candidates whose lower bound ranks them below those are not simulated
  // (bounded). 0: every survivor simulated (--exhaustive).
  size_t top = 0;
  // The part of these options the shared search steps read, for candidates of `file`.
  SearchRun search_run(const std::string& file) const {
    return SearchRun{file, WorkerOptions{jobs, cache, progress}, shard_index, shard_count, done, on_row, top};
  }
};

// A row's numbers as JSON (what workers send and journals keep: "variant" names the layout, "time_s" its step).
nlohmann::ordered_json row_numbers(const PlanRow& row);

struct PlanResult : SearchTotals {
  std::vector<PlanRow> rows;  // ranked
  int gpus_per_node = 8;
};

Verdict check_candidate(const model::PlanSpec& plan, const Candidate& candidate, int gpus_per_node);

PlanResult run_plan(const model::PlanSpec& plan, const PlanOptions& options);
// GPUs per node of the plan's GPU on its topology (located errors for a bad GPU or topology).
int plan_gpus_per_node(const model::PlanSpec& plan);
// The model the plan names, read as a scenario would (located errors).
model::ArchSpec plan_arch(const model::PlanSpec& plan);

}  // namespace tpsim::plan
