// Pruning, simulation in worker processes with the program cache, and ranking.
#include "plan/plan_search.hpp"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/input_error.hpp"
#include "input/gpu_reader.hpp"
#include "model/scenario.hpp"
#include "sim/cost/fabric.hpp"
#include "sim/engine/simulation_cache.hpp"
#include "sim/run/scenario_run.hpp"
#include "sim/run/step_bound.hpp"

namespace tpsim::plan {
namespace {

using Json = nlohmann::ordered_json;

// What bounds the step beyond compute: the largest of the bubble and each dimension's exposed communication.
std::string bound_of(const PlanRow& r) {
  const std::pair<double, const char*> parts[] = {{r.bubble_fraction * r.time_s, "bubble"},
                                                  {r.exposed_tp_s, "tp comm"},
                                                  {r.exposed_pp_s, "pp comm"},
                                                  {r.exposed_dp_s, "dp comm"},
                                                  {r.exposed_ep_s, "ep comm"}};
  double most = 0;
  const char* what = "compute";
  for (const auto& [seconds, name] : parts) {
    if (seconds > most) most = seconds, what = name;
  }
  return what;
}

// Tokens/s per GPU of a step of `time_s` on the layout's GPUs.
double tokens_per_gpu(const model::Workload& w, double time_s, const Layout& layout) {
  return static_cast<double>(w.global_batch * w.seq_len) / time_s / static_cast<double>(layout.gpus);
}

PlanRow row_of(const Candidate& c, const sim::ScenarioRun& run) {
  const sim::VariantRun& v = run.variants.front();
  PlanRow r;
  r.index = c.index;
  r.layout = c.layout;
  r.time_s = v.metrics.time_s;
  const model::Workload& w = run.scenario.workload;
  r.tokens_per_s_per_gpu = tokens_per_gpu(w, v.metrics.time_s, c.layout);
  r.mfu = v.mfu;
  r.memory_bytes = v.memory ? v.memory->device_bytes() : 0;
  r.bubble_fraction = v.pipeline ? v.pipeline->bubble_fraction : 0;
  r.compute_s = v.metrics.compute_s;
  const sim::ExposedByDimension e = sim::exposed_by_dimension(v);
  // The plan's dp column keeps the CP exchanges with the gradients' reduction (the data group's, as before).
  r.exposed_tp_s = e.tp_s, r.exposed_pp_s = e.pp_s, r.exposed_dp_s = e.dp_s + e.cp_s, r.exposed_ep_s = e.ep_s;
  return r;
}

// The row's labels from its layout and numbers: what bounds it, what was simulated, what came from closed forms.
void label(PlanRow& r) {
  r.bound = bound_of(r);
  const Layout& l = r.layout;
  r.closed_form.clear();
  r.simulated = l.pp > 1 ? "each distinct stage program (one TP group)" : "the step (one TP group)";
  std::vector<std::string> closed;
  if (l.pp > 1) closed.push_back("pipeline schedule timing");
  if (l.dp > 1) closed.push_back("dp collectives");
  if (l.cp > 1) closed.push_back("cp exchanges and the dp x cp gradient collectives");
  if (l.ep > l.tp) closed.push_back("ep all-to-alls beyond the TP group");
  closed.push_back("memory");
  for (size_t i = 0; i < closed.size(); ++i) r.closed_form += (i ? ", " : "") + closed[i];
}

}  // namespace

Json row_numbers(const PlanRow& r) {
  Json j;
  j["variant"] = describe(r.layout);
  j["time_s"] = r.time_s;
  j["tokens_per_s_per_gpu"] = r.tokens_per_s_per_gpu;
  j["mfu"] = r.mfu;
  j["memory_bytes"] = r.memory_bytes;
  j["bubble_fraction"] = r.bubble_fraction;
  j["compute_s"] = r.compute_s;
  j["exposed"] = {
      {"tp_s", r.exposed_tp_s}, {"pp_s", r.exposed_pp_s}, {"dp_s", r.exposed_dp_s}, {"ep_s", r.exposed_ep_s}};
  return j;
}

namespace {

void from_json(const Json& j, PlanRow& r) {
  r.time_s = j["time_s"];
  r.tokens_per_s_per_gpu = j["tokens_per_s_per_gpu"];
  r.mfu = j["mfu"];
  r.memory_bytes = j["memory_bytes"];
  r.bubble_fraction = j["bubble_fraction"];
  r.compute_s = j["compute_s"];
  r.exposed_tp_s = j["exposed"]["tp_s"], r.exposed_pp_s = j["exposed"]["pp_s"];
  r.exposed_dp_s = j["exposed"]["dp_s"], r.exposed_ep_s = j["exposed"]["ep_s"];
}

// A row from a worker's numbers: the layout and labels from the candidate.
PlanRow row_from(const Candidate& c, const Json& numbers) {
  PlanRow row;
  from_json(numbers, row);
  row.index = c.index;
  row.layout = c.layout;
  label(row);  // workers send numbers only
  return row;
}

// The rank value of a step of `step_s` with `model_flops` per GPU: the step itself, its tokens per GPU or its MFU, each
// negated where the larger ranks first.
double rank_of(const model::Scenario& s, const Layout& layout, RankBy by, double step_s, double model_flops) {
  switch (by) {
    case RankBy::kTime:
      return step_s;
    case RankBy::kTokensPerGpu:
      return -tokens_per_gpu(s.workload, step_s, layout);
    case RankBy::kMfu:
      return -model_flops / (step_s * sim::resolve_gpu(s).peak_bf16_flops);
  }
  return step_s;
}

// The least rank value of a candidate's row from its step's lower bound (sim/run/step_bound.hpp): the step itself,
// the tokens per GPU it allows, or the MFU it allows (the step's model FLOPs, known without simulating, over the
// least step); none where the step has no bound.
std::optional<double> rank_bound(const model::Scenario& s, const Layout& layout, RankBy by) {
  std::optional<sim::StepBound> bound;
  try {
    bound = sim::step_lower_bound(s);
  } catch (const std::exception&) {
    return std::nullopt;  // what the simulation then refuses, it reports
  }
  if (!bound || bound->step_s <= 0) return std::nullopt;
  return rank_of(s, layout, by, bound->step_s, bound->model_flops);
}

// The rank value of a candidate's row whose step takes `step_s` (a lower bound on the step gives one on the value),
// the model FLOPs from the step's bound where MFU ranks.
double rank_of_step(const model::Scenario& s, const Layout& layout, RankBy by, double step_s) {
  double model_flops = 0;
  if (by == RankBy::kMfu) {
    const std::optional<sim::StepBound> bound = sim::step_lower_bound(s);
    if (!bound) return std::numeric_limits<double>::lowest();  // no bound on the value: the job runs whole
    model_flops = bound->model_flops;
  }
  return rank_of(s, layout, by, step_s, model_flops);
}

double rank_value(const PlanRow& r, RankBy by) {
  switch (by) {
    case RankBy::kTime:
      return r.time_s;
    case RankBy::kTokensPerGpu:
      return -r.tokens_per_s_per_gpu;
    case RankBy::kMfu:
      return -r.mfu;
  }
  return r.time_s;
}

}  // namespace

RankBy rank_by_named(const std::string& name) {
  if (const std::optional<RankBy> rank_by = value_named(kRankByNames, name)) return *rank_by;
  throw InputError("--rank-by " + name + ": expected time (step time), tokens (tokens/s per GPU) or mfu");
}

model::ArchSpec plan_arch(const model::PlanSpec& plan) {
  return model::probe_scenario(plan).arch;
}

int plan_gpus_per_node(const model::PlanSpec& plan) {
  const sim::GpuSpec gpu = sim::resolve_gpu(model::probe_scenario(plan));
  sim::FabricRequest request;
  request.topology = plan.topology.empty() ? "nvswitch" : plan.topology;
  try {
    return sim::resolve_fabric(request, gpu).gpus_per_node;
  } catch (const InputError& error) {
    fail_at(plan.topology_at, std::string("hardware.topology: ") + error.detail());
  }
}

Verdict check_candidate(const model::PlanSpec& plan, const Candidate& c, int gpus_per_node) {
  const Layout& l = c.layout;
  if (plan.global_batch % (static_cast<int64_t>(l.dp) * l.micro_batch) != 0) {
    return Verdict{"divisibility", "global_batch does not divide over dp x micro_batch", 0, nullptr};
  }
  model::Scenario s;
  sim::GpuSpec gpu;
  Verdict v = check_scenario(scenario_text(plan, c, gpus_per_node), plan.file, s, gpu);
  if (!v.reason.empty()) return v;
  if (const double usable = sim::usable_hbm_bytes(gpu); usable > 0 && v.memory_bytes > usable) {
    v.reason = "memory";
    v.detail = "above the GPU's usable HBM";
    return v;
  }
  v.scenario = std::make_shared<const model::Scenario>(std::move(s));
  return v;
}

PlanResult run_plan(const model::PlanSpec& plan, const PlanOptions& options) {
  PlanResult result;
  const model::ArchSpec arch = plan_arch(plan);
  const int per_node = result.gpus_per_node = plan_gpus_per_node(plan);
  SearchSteps<Candidate, PlanRow> steps;
  steps.check = [&](const Candidate& c) { return check_candidate(plan, c, per_node); };
  steps.scenario_text = [&](const Candidate& c) { return scenario_text(plan, c, per_node); };
  steps.numbers = [](const Candidate& c, const sim::ScenarioRun& run) { return row_numbers(row_of(c, run)); };
  steps.row = row_from;
  steps.bound = [&](const Candidate& c, const model::Scenario& s) { return rank_bound(s, c.layout, options.rank_by); };
  steps.rank = [&](const PlanRow& r) { return rank_value(r, options.rank_by); };
  steps.rank_of_step = [&](const Candidate& c, const model::Scenario& s, double step_s) {
    return rank_of_step(s, c.layout, options.rank_by, step_s);
  };
  result.rows =
      search_candidates(enumerate_candidates(plan, arch, per_node), steps, options.search_run(plan.file), result);
  std::stable_sort(result.rows.begin(), result.rows.end(), [&](const PlanRow& a, const PlanRow& b) {
    const double x = rank_value(a, options.rank_by), y = rank_value(b, options.rank_by);
    return x != y ? x < y : a.index < b.index;
  });
  std::sort(result.failures.begin(), result.failures.end());
  return result;
}

}  // namespace tpsim::plan
