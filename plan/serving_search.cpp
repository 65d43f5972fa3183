// Serving plans: pruning with the KV cache counted apart, the generate simulations, targets, ranking, Pareto front.
#include "plan/serving_search.hpp"

#include <algorithm>

#include "base/input_error.hpp"
#include "input/gpu_reader.hpp"
#include "model/scenario.hpp"
#include "plan/memory_estimate.hpp"
#include "plan/serving_latency.hpp"
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
  r.prefill_s = v.ttft_s.value_or(0);
  r.decode_step_s = v.tpot_s.value_or(0);
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
  r.prefill_s = j["prefill_s"];
  r.decode_step_s = j["decode_step_s"];
  const ServedLatency served =
      served_latency(plan.serve.batching, r.prefill_s, r.decode_step_s, c.layout.batch, plan.serve.gen_len);
  r.ttft_s = served.ttft_s;
  r.tpot_s = served.tpot_s;
  r.tokens_per_s_per_gpu = j["tokens_per_s_per_gpu"];
  r.memory_bytes = j["memory_bytes"];
  r.exposed_tp_s = j["exposed"]["tp_s"], r.exposed_ep_s = j["exposed"]["ep_s"];
  r.targets = check_targets(plan.serve, r.ttft_s, r.tpot_s);
  return r;
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
  j["prefill_s"] = r.prefill_s;
  j["decode_step_s"] = r.decode_step_s;
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
  sim::GpuSpec gpu;
  v = check_scenario(serving_scenario_text(plan, c, gpus_per_node), plan.file, s, gpu);
  if (!v.reason.empty()) return v;
  const double usable = sim::usable_hbm_bytes(gpu);
  if (usable <= 0 || v.memory_bytes <= usable) {
    v.scenario = std::make_shared<const model::Scenario>(std::move(s));
    return v;
  }
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
  const int per_node = plan_gpus_per_node(plan);
  SearchSteps<ServingCandidate, ServingRow> steps;
  steps.check = [&](const ServingCandidate& c) { return check_serving_candidate(plan, c, per_node); };
  steps.scenario_text = [&](const ServingCandidate& c) { return serving_scenario_text(plan, c, per_node); };
  steps.numbers = [](const ServingCandidate& c, const sim::ScenarioRun& run) {
    return serving_row_numbers(row_of(c, run));
  };
  steps.row = [&](const ServingCandidate& c, const Json& numbers) { return row_from(plan, c, numbers); };
  result.rows = search_candidates(enumerate_serving_candidates(plan, plan_arch(plan), per_node), steps,
                                  options.search_run(plan.file), result);
  mark_pareto_front(result.rows);
  rank(result);
  std::sort(result.failures.begin(), result.failures.end());
  return result;
}

}  // namespace tpsim::plan
