// Serving plans: pruning with the KV cache counted apart, the generate simulations, targets, ranking, Pareto front.
#include "plan/serving_search.hpp"

#include <algorithm>

#include "base/input_error.hpp"
#include "input/gpu_reader.hpp"
#include "model/scenario.hpp"
#include "plan/memory_estimate.hpp"
#include "plan/plan_workers.hpp"
#include "sim/run/scenario_run.hpp"

namespace tpsim::plan {
namespace {

using Json = nlohmann::ordered_json;

ServingRow row_of(const ServingCandidate& c, const sim::ScenarioRun& run) {
  const sim::VariantRun& v = run.variants.front();
  ServingRow r;
  r.index = c.index;
  r.layout = c.layout;
  r.time_s = v.metrics.time_s;
  r.ttft_s = v.ttft_s.value_or(0);
  r.tpot_s = v.tpot_s.value_or(0);
  r.tokens_per_s_per_gpu = v.tokens_per_s / sim::replica_gpus(v);  // as `tpsim run --json` reports it
  r.memory_bytes = v.memory ? v.memory->device_bytes() : 0;
  const sim::ExposedByDimension e = sim::exposed_by_dimension(v);
  r.exposed_tp_s = e.tp_s, r.exposed_ep_s = e.ep_s;
  return r;
}

ServingRow row_from(const model::PlanSpec& plan, const ServingCandidate& c, const Json& j) {
  ServingRow r;
  r.index = c.index;
  r.layout = c.layout;
  r.time_s = j["time_s"];
  r.ttft_s = j["ttft_s"];
  r.tpot_s = j["tpot_s"];
  r.tokens_per_s_per_gpu = j["tokens_per_s_per_gpu"];
  r.memory_bytes = j["memory_bytes"];
  r.exposed_tp_s = j["exposed"]["tp_s"], r.exposed_ep_s = j["exposed"]["ep_s"];
  r.targets = check_targets(plan.serve, r.ttft_s, r.tpot_s);
  return r;
}

void simulate_all(const model::PlanSpec& plan, const std::vector<ServingCandidate>& todo, const PlanOptions& options,
                  int gpus_per_node, ServingResult& result) {
  std::map<size_t, const ServingCandidate*> by_index;
  std::vector<WorkerJob> jobs;
  for (const ServingCandidate& c : todo) {
    by_index[c.index] = &c;
    jobs.push_back(WorkerJob{c.index, c.layout.program_key()});
  }
  const SimulateJob simulate = [&](size_t index, sim::SimulationCache& cache) {
    const ServingCandidate& c = *by_index.at(index);
    const model::Scenario s = model::parse_scenario(serving_scenario_text(plan, c, gpus_per_node), plan.file);
    cache.set_context(s.topology.value + "/" + std::to_string(s.nodes));
    return serving_row_numbers(row_of(c, sim::run_scenario(s)));
  };
  const TakeJob take = [&](size_t index, const Json* numbers, const std::string& error) {
    const ServingCandidate& c = *by_index.at(index);
    if (!numbers) {
      result.failures.push_back("candidate " + std::to_string(index) + " (" + describe(c.layout) + "): " + error);
      return;
    }
    result.rows.push_back(row_from(plan, c, *numbers));
    if (options.on_row) options.on_row(index, *numbers);
  };
  const WorkerCounts counts =
      simulate_in_workers(jobs, WorkerOptions{options.jobs, options.cache, options.progress}, simulate, take);
  result.cache_hits += counts.cache_hits;
  result.cache_misses += counts.cache_misses;
  result.cache_saved_s += counts.cache_saved_s;
  result.failures.insert(result.failures.end(), counts.crashes.begin(), counts.crashes.end());
}

// Those that meet every target first, each part by tokens/s per GPU, ties by candidate number.
void rank(ServingResult& result) {
  std::stable_sort(result.rows.begin(), result.rows.end(), [](const ServingRow& a, const ServingRow& b) {
    if (a.targets.meets != b.targets.meets) return a.targets.meets;
    if (a.tokens_per_s_per_gpu != b.tokens_per_s_per_gpu) return a.tokens_per_s_per_gpu > b.tokens_per_s_per_gpu;
    return a.index < b.index;
  });
  result.meeting = static_cast<size_t>(
      std::count_if(result.rows.begin(), result.rows.end(), [](const ServingRow& r) { return r.targets.meets; }));
}

}  // namespace

TargetCheck check_targets(const model::ServingWorkload& serve, double ttft_s, double tpot_s) {
  TargetCheck check;
  const std::pair<const char*, double> ratios[] = {{"ttft", serve.ttft_s ? ttft_s / *serve.ttft_s : -1.0},
                                                   {"tpot", serve.tpot_s ? tpot_s / *serve.tpot_s : -1.0}};
  for (const auto& [name, ratio] : ratios) {
    if (ratio < 0) continue;  // no such target
    if (ratio > 1.0) check.missed.emplace_back(name);
    if (check.binding.empty() || ratio > check.use) check.binding = name, check.use = ratio;
  }
  check.meets = check.missed.empty();
  return check;
}

void mark_pareto_front(std::vector<ServingRow>& rows) {
  for (ServingRow& row : rows) {
    const double user = row.tokens_per_s_per_user(), gpu = row.tokens_per_s_per_gpu;
    row.front = std::none_of(rows.begin(), rows.end(), [&](const ServingRow& other) {
      const double other_user = other.tokens_per_s_per_user(), other_gpu = other.tokens_per_s_per_gpu;
      return other_user >= user && other_gpu >= gpu && (other_user > user || other_gpu > gpu);
    });
  }
}

Json serving_row_numbers(const ServingRow& r) {
  Json j;
  j["variant"] = describe(r.layout);
  j["time_s"] = r.time_s;
  j["ttft_s"] = r.ttft_s;
  j["tpot_s"] = r.tpot_s;
  j["tokens_per_s_per_gpu"] = r.tokens_per_s_per_gpu;
  j["memory_bytes"] = r.memory_bytes;
  j["exposed"] = {{"tp_s", r.exposed_tp_s}, {"ep_s", r.exposed_ep_s}};
  return j;
}

Verdict check_serving_candidate(const model::PlanSpec& plan, const ServingCandidate& c, int gpus_per_node) {
  Verdict v;
  // A decode step has one token per sequence: sequence parallelism needs the batch to split over tp.
  if (c.layout.tp_mode == "sp" && c.layout.batch % c.layout.tp != 0) {
    v.reason = "divisibility";
    v.detail = "the batch does not divide over tp (sequence parallelism shards each decode step's tokens)";
    return v;
  }
  model::Scenario s;
  try {
    s = model::parse_scenario(serving_scenario_text(plan, c, gpus_per_node), plan.file);
  } catch (const InputError& error) {
    v.reason = refusal_reason(error.detail());
    v.detail = error.detail();
    return v;
  }
  const sim::GpuSpec gpu = sim::resolve_gpu(s);
  try {
    sim::check_hardware(s, gpu);
  } catch (const InputError& error) {
    v.reason = "placement";
    v.detail = error.detail();
    return v;
  }
  try {
    v.memory_bytes = sim::estimate_memory(s, s.variants.front(), gpu).device_bytes();
  } catch (const InputError& error) {
    v.reason = refusal_reason(error.detail());
    v.detail = error.detail();
    return v;
  }
  const double usable = sim::usable_hbm_bytes(gpu);
  if (usable <= 0 || v.memory_bytes <= usable) return v;
  // The same layout serving one sequence: what the batch adds is its KV cache and its prefill's activations.
  model::Scenario one = s;
  one.workload.batch = 1;
  if (sim::estimate_memory(one, one.variants.front(), gpu).device_bytes() > usable) {
    v.reason = "memory";
    v.detail = "one sequence per TP group is above the GPU's usable HBM (the weights and runtime)";
  } else {
    v.reason = "kv cache";
    v.detail = "the batch's KV cache and prefill activations take the GPU above its usable HBM";
  }
  return v;
}

ServingResult run_serving_plan(const model::PlanSpec& plan, const PlanOptions& options) {
  ServingResult result;
  const int gpus_per_node = plan_gpus_per_node(plan);
  const std::vector<ServingCandidate> all = enumerate_serving_candidates(plan, plan_arch(plan), gpus_per_node);
  result.candidates = all.size();
  std::vector<ServingCandidate> kept;
  for (const ServingCandidate& c : all) {
    const Verdict v = check_serving_candidate(plan, c, gpus_per_node);
    if (v.reason.empty()) {
      kept.push_back(c);
      continue;
    }
    ++result.pruned[v.reason];
    ++result.why[v.reason][v.detail];
  }
  std::vector<ServingCandidate> mine;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (i % options.shard_count != options.shard_index) continue;
    if (const auto done = options.done.find(kept[i].index); done != options.done.end()) {
      result.rows.push_back(row_from(plan, kept[i], done->second));
      continue;
    }
    mine.push_back(kept[i]);
  }
  simulate_all(plan, mine, options, gpus_per_node, result);
  mark_pareto_front(result.rows);
  rank(result);
  std::sort(result.failures.begin(), result.failures.end());
  return result;
}

}  // namespace tpsim::plan
