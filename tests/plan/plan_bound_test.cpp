// tpsim plan's bounding: every candidate's lower bound at most its simulated step (dense and MoE plans), the top rows
// of a bounded search those of the exhaustive one (numbers and JSON rows), and the same counts and rows with one or two
// workers.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"
#include "input/gpu_reader.hpp"
#include "input/plan_file.hpp"
#include "input/scenario_loader.hpp"
#include "plan/plan_search.hpp"
#include "plan_test_support.hpp"
#include "sim/engine/runner/window_clock.hpp"
#include "sim/run/scenario_run.hpp"
#include "sim/run/step_bound.hpp"

using namespace tpsim;

namespace {

// The small plan of plan_test.cpp, and a wider one: both data parallelisms, async TP, zb-h1 and interleaved.
const std::string& kSmall = test::kSmallPlan;
const std::string kWide =
    "model: llama-3.1-8b\n"
    "hardware: {gpu: h100-sxm, gpus: 8}\n"
    "workload: {global_batch: 16, seq_len: 4096}\n"
    "search: {tp: [1, 2, 4], pp: [1, 2], micro_batch: [1, 2], recompute: [none, selective, full], "
    "tp_mode: [sp, async], schedule: [1f1b, interleaved, zb-h1], data_parallel: [fsdp, ddp]}\n";

std::string shipped(const char* name) {
  return std::string(TPSIM_SOURCE_DIR) + "/scenarios/plans/" + name;
}

// Every simulated row's candidate: its bound, which must not exceed its step. Returns the bounds over the steps.
std::vector<double> check_bounds_below_steps(const model::PlanSpec& spec) {
  plan::PlanOptions exhaustive;
  exhaustive.jobs = 2;
  const plan::PlanResult result = plan::run_plan(spec, exhaustive);
  REQUIRE(result.rows.size() > 5);
  const int per_node = plan::plan_gpus_per_node(spec);
  const std::vector<plan::Candidate> all = plan::enumerate_candidates(spec, plan::plan_arch(spec), per_node);
  size_t bounded = 0;
  std::vector<double> shares;
  for (const plan::PlanRow& row : result.rows) {
    const plan::Verdict v = plan::check_candidate(spec, all[row.index], per_node);
    REQUIRE(v.scenario);
    const std::optional<sim::StepBound> bound = sim::step_lower_bound(*v.scenario);
    INFO("candidate " << row.index << " " << plan::describe(row.layout));
    // Every schedule of these plans has a bound (zb-v, which has none, is not among them).
    REQUIRE(bound);
    ++bounded;
    CHECK(bound->step_s > 0);
    CHECK(bound->step_s <= row.time_s);
    shares.push_back(bound->step_s / row.time_s);
    // The model FLOPs the bound counts are those the simulated row's MFU was taken from (MFU = FLOPs / (step x
    // peak)); the relative margin is the rounding of the three products.
    const double peak = sim::resolve_gpu(*v.scenario).peak_bf16_flops;
    CHECK(bound->model_flops == Approx(row.mfu * row.time_s * peak).epsilon(1e-12));
  }
  CHECK(bounded == result.rows.size());
  return shares;
}

// Every simulated row's candidate run again under a first-run probe (what `tpsim plan` refines its bounds with): the
// bound its first run gives, where it gives one, must not exceed its step. Returns how many gave one.
size_t check_first_run_bounds_below_steps(const model::PlanSpec& spec) {
  plan::PlanOptions exhaustive;
  exhaustive.jobs = 2;
  const plan::PlanResult result = plan::run_plan(spec, exhaustive);
  const int per_node = plan::plan_gpus_per_node(spec);
  const std::vector<plan::Candidate> all = plan::enumerate_candidates(spec, plan::plan_arch(spec), per_node);
  size_t fired = 0;
  for (const plan::PlanRow& row : result.rows) {
    const plan::Verdict v = plan::check_candidate(spec, all[row.index], per_node);
    REQUIRE(v.scenario);
    INFO("candidate " << row.index << " " << plan::describe(row.layout));
    const sim::FirstRunProbe probe;
    try {
      // A run the probe lets finish needs no second run: its step is the plan's row. (Run outside CHECK, which would
      // take the probe's throw for a failure.)
      const double step_s = sim::run_scenario(*v.scenario).variants.front().metrics.time_s;
      CHECK(step_s == row.time_s);
    } catch (const sim::FirstRunBound& bound) {
      ++fired;
      CHECK(bound.step_s > 0);
      CHECK(bound.step_s <= row.time_s);
    }
  }
  return fired;
}

// Llama-3.1-8B with TP 8 inside each of two ib-rail nodes and FSDP over the two, 16 micro-batches of 1,024 tokens per
// replica: every micro-batch gathers the weights across the nodes again.
const std::string kFsdpAcrossNodes =
    "name: fsdp-across-nodes\n"
    "model: llama-3.1-8b\n"
    "hardware: {gpu: h100-sxm, topology: ib-rail, nodes: 2}\n"
    "workload: {phase: train, batch: 1, seq_len: 1024, global_batch: 32, recompute: none}\n"
    "parallelism: {tp: 8, pp: 1, dp: 2}\n"
    "fsdp: {}\n"
    "variants:\n"
    "  - {name: sp, tp_mode: sp}\n";

// For each of `tops`: the first `top` rows of a bounded search are the exhaustive search's, and some candidates were
// bounded.
void check_top_rows_exact(const model::PlanSpec& spec, const std::vector<size_t>& tops, plan::RankBy by) {
  plan::PlanOptions exhaustive;
  exhaustive.jobs = 2;
  exhaustive.rank_by = by;
  const plan::PlanResult all = plan::run_plan(spec, exhaustive);
  CHECK(all.bounded == 0);
  for (const size_t top : tops) {
    INFO("top " << top);
    plan::PlanOptions bounded = exhaustive;
    bounded.top = top;
    const plan::PlanResult some = plan::run_plan(spec, bounded);
    REQUIRE(all.rows.size() > top);
    REQUIRE(some.rows.size() >= top);
    CHECK(some.bounded > 0);
    CHECK(some.rows.size() + static_cast<size_t>(some.bounded) == all.rows.size());
    for (size_t i = 0; i < top; ++i) {
      INFO("rank " << i + 1);
      CHECK(some.rows[i].index == all.rows[i].index);
      CHECK(plan::row_numbers(some.rows[i]) == plan::row_numbers(all.rows[i]));
    }
  }
}

}  // namespace

TEST_CASE(
    "no candidate's lower bound exceeds its simulated step, on the small plan, a wider one and the MoE plan, and the "
    "wider one's are at least 0.9 of their steps at the median") {
  check_bounds_below_steps(model::parse_plan(kSmall, "p.yaml"));
  std::vector<double> wide = check_bounds_below_steps(model::parse_plan(kWide, "p.yaml"));
  // A plan leaves candidates out only as far as their bounds are tight: this one's are 0.91 of their steps at the
  // median under the limiter's window (0.82 to 0.97), where the path at the clocks the window's energy allows bounds
  // the step; 0.9 keeps them there.
  std::sort(wide.begin(), wide.end());
  CHECK(wide[wide.size() / 2] >= 0.9);
  check_bounds_below_steps(model::load_plan(shipped("qwen3-30b-a3b-16xh100-ep.yaml")));
}

TEST_CASE(
    "no candidate's bound from its first run at the back-to-back clock exceeds its simulated step, on the wider plan "
    "and the MoE plan") {
  // Under the H100's window nearly every training step needs a second run at its own clock: the probe fires.
  CHECK(check_first_run_bounds_below_steps(model::parse_plan(kWide, "p.yaml")) > 10);
  CHECK(check_first_run_bounds_below_steps(model::load_plan(shipped("qwen3-30b-a3b-16xh100-ep.yaml"))) > 0);
}

TEST_CASE("a bounded search ranks its top rows exactly as the exhaustive search, by time, tokens per GPU and MFU") {
  check_top_rows_exact(model::parse_plan(kWide, "p.yaml"), {1, 3, 5}, plan::RankBy::kTime);
  check_top_rows_exact(model::parse_plan(kWide, "p.yaml"), {4}, plan::RankBy::kTokensPerGpu);
  check_top_rows_exact(model::parse_plan(kWide, "p.yaml"), {2}, plan::RankBy::kMfu);
  check_top_rows_exact(model::load_plan(shipped("llama3-8b-8xh100.yaml")), {5}, plan::RankBy::kTime);
}

TEST_CASE(
    "tpsim plan writes the same JSON rows bounded and --exhaustive, and the same counts with one or two workers") {
  const std::string path = test::plan_temp_file("bound.yaml", kWide);
  const test::CommandResult bounded = test::run_tpsim("plan " + path + " -j 2 --top 4 --json -");
  const test::CommandResult one = test::run_tpsim("plan " + path + " -j 1 --top 4 --json -");
  const test::CommandResult again = test::run_tpsim("plan " + path + " -j 2 --top 4 --json -");
  const test::CommandResult all = test::run_tpsim("plan " + path + " -j 2 --top 4 --exhaustive --json -");
  REQUIRE(bounded.exit_code == 0);
  REQUIRE(all.exit_code == 0);
  CHECK(bounded.out == again.out);
  const nlohmann::json b = nlohmann::json::parse(bounded.out), o = nlohmann::json::parse(one.out);
  const nlohmann::json a = nlohmann::json::parse(all.out);
  CHECK(b["rows"].dump() == a["rows"].dump());
  CHECK(o["rows"].dump() == b["rows"].dump());
  // Which candidates are simulated depends on the bounds and the batches, not on the workers.
  CHECK(o["simulated"] == b["simulated"]);
  CHECK(o["bounded"] == b["bounded"]);
  CHECK(o["bounded_after_first_run"] == b["bounded_after_first_run"]);
  CHECK(b["bounded"].get<int>() > 0);
  // Under the H100's limiter window some candidates are bounded only by their first runs (the rest before any run).
  CHECK(b["bounded_after_first_run"].get<int>() > 0);
  CHECK(b["bounded_after_first_run"].get<int>() < b["bounded"].get<int>());
  CHECK(a["bounded"] == 0);
  CHECK(b["simulated"].get<int>() + b["bounded"].get<int>() == a["simulated"].get<int>());
  const test::CommandResult table = test::run_tpsim("plan " + path + " -j 2 --top 4");
  CHECK(table.out.find(" simulated, " + std::to_string(b["bounded"].get<int>()) + " bounded (" +
                       std::to_string(b["bounded_after_first_run"].get<int>()) + " after a first run); ") !=
        std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("a bounded plan run as 3 shards and merged ranks its top rows as the unsharded run does") {
  test::check_merge_of_plan(kWide, 3);
}

TEST_CASE(
    "the lower bound of an FSDP step across two nodes covers its gathers' bytes at the NIC's rate and stays below "
    "its simulated step") {
  const std::string path = test::plan_temp_file("fsdp_nodes.yaml", kFsdpAcrossNodes);
  const test::CommandResult run = test::run_tpsim("run " + path + " --json -");
  std::filesystem::remove(path);
  REQUIRE(run.exit_code == 0);
  const nlohmann::json result = nlohmann::json::parse(run.out)["results"][0];
  // What the ring collectives between the nodes ("nccl + network": the data-parallel ones) send out of each GPU:
  // (n - 1) / n of each call's tensor, all through the GPU's own NIC (one member of the pair per node, one rail).
  double network_bytes = 0;
  for (const nlohmann::json& c : result["collectives"]) {
    if (c["costed_by"] != "nccl + network") continue;
    const double n = c["ranks"].get<double>();
    network_bytes += c["count"].get<double>() * c["tensor_bytes"].get<double>() * (n - 1) / n;
  }
  REQUIRE(network_bytes > 0);
  const double nic_Bps = 400e9 / 8;  // ib-rail's NIC per GPU: 400 Gb/s
  const std::optional<sim::StepBound> bound = sim::step_lower_bound(model::parse_scenario(kFsdpAcrossNodes, "f.yaml"));
  REQUIRE(bound);
  // The bound may sit below the bytes' time by SimGrid's precision per activity only (1e-9 s each, a few thousand).
  CHECK(bound->step_s >= network_bytes / nic_Bps - 1e-5);
  CHECK(bound->step_s <= result["time_s"].get<double>());
}
