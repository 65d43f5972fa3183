// tpsim plan: the plan file's errors, the candidates, pruning against tpsim run, the program cache, --explain and
// determinism, on a small plan (Llama-3.1-8B on 8 H100s) and the shipped plans' pruning.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/input_error.hpp"
#include "cli/cli_support.hpp"
#include "input/plan_file.hpp"
#include "model/graph/program_builder.hpp"
#include "model/scenario.hpp"
#include "plan/memory_estimate.hpp"
#include "plan/plan_search.hpp"
#include "plan/serving_search.hpp"
#include "plan_test_support.hpp"
#include "sim/engine/isolated_run.hpp"
#include "sim/engine/simulation_cache.hpp"
#include "sim/run/scenario_run.hpp"
#include "test_support.hpp"

using namespace tpsim;

namespace {

const std::string& kSmall = test::kSmallPlan;

}  // namespace

TEST_CASE("a minimal plan of model, GPU, GPU count and global batch loads with every search default") {
  const model::PlanSpec spec = model::parse_plan(
      "model: llama-3.1-70b\nhardware: {gpu: h100-sxm, gpus: 64}\nworkload: {global_batch: 128, seq_len: 8192}\n",
      "p.yaml");
  const int per_node = plan::plan_gpus_per_node(spec);
  REQUIRE(per_node == 8);
  const std::vector<plan::Candidate> all = plan::enumerate_candidates(spec, plan::plan_arch(spec), per_node);
  // tp 1, 2, 4, 8 and pp 1 to 32 (powers of two with tp x pp dividing 64); per mesh: data parallelism (fsdp, ddp where
  // dp > 1), schedules (1f1b, interleaved 2, zb-h1 where pp > 1), micro-batch 1 or 2, three recomputations and the TP
  // modes (sp, and async where tp > 1).
  size_t expected = 0;
  for (int tp : {1, 2, 4, 8}) {
    for (int pp : {1, 2, 4, 8, 16, 32}) {
      if (tp * pp > 64) continue;
      const int dp = 64 / (tp * pp);
      expected += static_cast<size_t>((dp > 1 ? 2 : 1) * (pp > 1 ? 3 : 1) * 2 * 3 * (tp > 1 ? 2 : 1));
    }
  }
  CHECK(all.size() == expected);
  for (size_t i = 0; i < all.size(); ++i) CHECK(all[i].index == i);
}

TEST_CASE("bad plan files are refused with one located line naming what is valid") {
  const std::string ok_hw = "hardware: {gpu: h100-sxm, gpus: 8}\n";
  const std::string ok_wl = "workload: {global_batch: 8, seq_len: 2048}\n";
  const std::string m = "model: llama-3.1-8b\n";
  struct Case {
    std::string text, expect;
  };
  const std::vector<Case> cases = {
      {m + ok_hw + ok_wl + "serach: {tp: 2}\n", "p.yaml:4:1: unknown key 'serach'"},
      {m + ok_hw + ok_wl + "search: {tq: 2}\n", "p.yaml:4:10: unknown key 'tq' in search; valid keys:"},
      {m + ok_hw + ok_wl + "search: {recompute: some}\n", "p.yaml:4:21: search.recompute"},
      {m + ok_hw + ok_wl + "search: {tp: []}\n", "p.yaml:4:14: search.tp is an empty list"},
      {m + ok_hw + ok_wl + "search: {tp: [2, 2]}\n", "p.yaml:4:18: search.tp names '2' twice"},
      {m + ok_hw + ok_wl + "search: {tp: {a: 1}}\n", "p.yaml:4:14: search.tp must be a value or a list"},
      {m + ok_hw + ok_wl + "search: {pp: -1}\n", "p.yaml:4:14: search.pp"},
      {m + "hardware: {gpu: h100-sxm, gpus: 0}\n" + ok_wl, "p.yaml:2:33: hardware.gpus"},
      {m + "hardware: {gpu: h100-sxm}\n" + ok_wl, "p.yaml:2:11: hardware needs the key 'gpus'"},
      {m + ok_hw + "workload: {seq_len: 2048}\n", "p.yaml:3:11: workload needs the key 'global_batch'"},
      {m + ok_hw + "workload: {global_batch: x, seq_len: 2048}\n", "p.yaml:3:26: workload.global_batch"},
      {m + ok_hw + "workload: {phase: decode, global_batch: 8, seq_len: 2048}\n", "p.yaml:3:19: workload.phase"},
      {m + ok_hw + ok_wl + "calibration:\n", "p.yaml:4:1: calibration is empty"},
      {"- a\n- b\n", "p.yaml:1:1: the plan must be a mapping"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const std::string error = test::plan_error(c.text);
    CHECK(error.rfind(c.expect, 0) == 0);
    CHECK(error.find('\n') == std::string::npos);
  }
  // What the plan's model and GPU name is checked where the plan names it.
  const model::PlanSpec bad_model = model::parse_plan("model: llama-9\n" + ok_hw + ok_wl, "p.yaml");
  CHECK_THROWS_WITH(plan::plan_arch(bad_model), Catch::StartsWith("p.yaml:1:8:"));
  const model::PlanSpec bad_gpu = model::parse_plan(m + "hardware: {gpu: h999, gpus: 8}\n" + ok_wl, "p.yaml");
  CHECK_THROWS_WITH(plan::plan_gpus_per_node(bad_gpu), Catch::StartsWith("p.yaml:2:17:"));
}

TEST_CASE("tpsim plan refuses a bad plan file with exit 2 and one line on stderr") {
  const std::string path =
      test::plan_temp_file("bad.yaml", "model: llama-3.1-8b\nhardware: {gpu: h100-sxm, gpus: 8}\n");
  const test::CommandResult r = test::run_tpsim("plan " + path);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("needs the key 'workload'") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  std::filesystem::remove(path);
}

TEST_CASE("layers that do not split over the pipeline's chunks are split with the end chunks one layer lighter") {
  const model::PlanSpec spec = model::parse_plan(
      "model: llama-3.1-405b\nhardware: {gpu: h100-sxm, gpus: 16384}\nworkload: {global_batch: 2048, seq_len: 8192}\n"
      "search: {tp: 8, pp: 16, micro_batch: 1, data_parallel: fsdp, recompute: selective, tp_mode: sp, schedule: "
      "1f1b}\n",
      "p.yaml");
  const std::vector<plan::Candidate> all = plan::enumerate_candidates(spec, plan::plan_arch(spec), 8);
  REQUIRE(all.size() == 1);
  std::vector<int64_t> expected(16, 8);  // 126 = 7 + 14 x 8 + 7, as Llama 3 405B's 16 stages
  expected.front() = expected.back() = 7;
  CHECK(all[0].layout.chunk_layers == expected);
  const model::Scenario s = model::parse_scenario(plan::scenario_text(spec, all[0], 8), "p.yaml");
  CHECK(s.pipeline.chunk_layers == expected);
}

TEST_CASE("pruning drops no candidate that runs: memory-pruned ones exceed the HBM in tpsim run, kept ones match") {
  const model::PlanSpec spec = model::parse_plan(
      "model: llama-3.1-8b\nhardware: {gpu: h100-sxm, gpus: 8}\nworkload: {global_batch: 12, seq_len: 8192}\n"
      "search: {tp: [1, 8], pp: [1, 2], micro_batch: [1, 2], recompute: [none, full], tp_mode: sp, schedule: 1f1b, "
      "data_parallel: ddp}\n",
      "p.yaml");
  const std::vector<plan::Candidate> all = plan::enumerate_candidates(spec, plan::plan_arch(spec), 8);
  int memory = 0, kept = 0, divisibility = 0;
  for (const plan::Candidate& c : all) {
    const plan::Verdict v = plan::check_candidate(spec, c, 8);
    INFO(plan::describe(c.layout) + ": " + v.reason + " " + v.detail);
    const std::string text = plan::scenario_text(spec, c, 8);
    if (v.reason == "divisibility") {
      // tpsim run refuses it as well.
      CHECK_THROWS_AS(sim::run_scenario(model::parse_scenario(text, "p.yaml")), InputError);
      ++divisibility;
      continue;
    }
    REQUIRE((v.reason.empty() || v.reason == "memory"));
    const sim::ScenarioRun run = sim::run_scenario(model::parse_scenario(text, "p.yaml"));
    const sim::VariantRun& variant = run.variants.front();
    // The estimate is the run's own count, exactly.
    CHECK(variant.memory->device_bytes() == v.memory_bytes);
    CHECK(sim::fits_memory(variant, run.gpu) == std::optional<bool>(v.reason.empty()));
    (v.reason.empty() ? kept : memory)++;
  }
  CHECK(memory > 0);
  CHECK(kept > 0);
  CHECK(divisibility > 0);
}

TEST_CASE("the program cache gives the ranked numbers of uncached runs, bit for bit, and reuses programs") {
  const model::PlanSpec spec = model::parse_plan(kSmall, "p.yaml");
  plan::PlanOptions cached;
  plan::PlanOptions uncached;
  uncached.cache = false;
  const plan::PlanResult a = plan::run_plan(spec, cached);
  const plan::PlanResult b = plan::run_plan(spec, uncached);
  REQUIRE(a.rows.size() == b.rows.size());
  REQUIRE(a.rows.size() > 5);
  for (size_t i = 0; i < a.rows.size(); ++i) {
    CHECK(a.rows[i].index == b.rows[i].index);
    CHECK(a.rows[i].time_s == b.rows[i].time_s);
    CHECK(a.rows[i].exposed_tp_s == b.rows[i].exposed_tp_s);
    CHECK(a.rows[i].exposed_dp_s == b.rows[i].exposed_dp_s);
    CHECK(a.rows[i].bubble_fraction == b.rows[i].bubble_fraction);
  }
  CHECK(a.cache_hits > 0);
  CHECK(b.cache_hits == 0);
  CHECK(a.failures.empty());
}

TEST_CASE("tpsim plan --explain N prints a scenario that tpsim run reproduces to the last digit") {
  const std::string path = test::plan_temp_file("small.yaml", kSmall);
  const test::CommandResult ranked = test::run_tpsim("plan " + path + " --json - --top 3");
  REQUIRE(ranked.exit_code == 0);
  const nlohmann::json plan = nlohmann::json::parse(ranked.out);
  REQUIRE(plan["rows"].size() == 3);
  for (const nlohmann::json& row : plan["rows"]) {
    const std::string index = std::to_string(row["index"].get<size_t>());
    const test::CommandResult explained = test::run_tpsim("plan " + path + " --explain " + index);
    REQUIRE(explained.exit_code == 0);
    const std::string scenario = test::plan_temp_file("explained.yaml", explained.out);
    const test::CommandResult run = test::run_tpsim("run " + scenario + " --json -");
    REQUIRE(run.exit_code == 0);
    const nlohmann::json result = nlohmann::json::parse(run.out);
    CHECK(result["results"][0]["time_s"].get<double>() == row["time_s"].get<double>());
    std::filesystem::remove(scenario);
  }
  std::filesystem::remove(path);
}

TEST_CASE("the same plan gives byte-identical outputs, and the same ranked rows with one or two workers") {
  const std::string path = test::plan_temp_file("small.yaml", kSmall);
  // The program counts depend on how candidates are shared over the workers; the ranked rows do not.
  const test::CommandResult one = test::run_tpsim("plan " + path + " -j 1 --json -");
  const test::CommandResult two = test::run_tpsim("plan " + path + " -j 2 --json -");
  const test::CommandResult again = test::run_tpsim("plan " + path + " -j 2 --json -");
  REQUIRE(one.exit_code == 0);
  CHECK(two.out == again.out);
  CHECK(nlohmann::json::parse(one.out)["rows"] == nlohmann::json::parse(two.out)["rows"]);
  const test::CommandResult table_one = test::run_tpsim("plan " + path + " -j 1 --csv -");
  const test::CommandResult table_two = test::run_tpsim("plan " + path + " -j 2 --csv -");
  CHECK(table_one.out == table_two.out);
  std::filesystem::remove(path);
}

TEST_CASE("the shipped plans load, training and serving, and pruning leaves candidates to simulate in each") {
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TPSIM_SOURCE_DIR) + "/scenarios/plans")) {
    INFO(entry.path().string());
    const model::PlanSpec spec = model::load_plan(entry.path().string());
    const int per_node = plan::plan_gpus_per_node(spec);
    size_t kept = 0, candidates = 0;
    if (spec.serving) {
      const auto all = plan::enumerate_serving_candidates(spec, plan::plan_arch(spec), per_node);
      for (const auto& c : all) kept += plan::check_serving_candidate(spec, c, per_node).reason.empty() ? 1 : 0;
      candidates = all.size();
    } else {
      const std::vector<plan::Candidate> all = plan::enumerate_candidates(spec, plan::plan_arch(spec), per_node);
      for (const plan::Candidate& c : all) kept += plan::check_candidate(spec, c, per_node).reason.empty() ? 1 : 0;
      candidates = all.size();
    }
    CHECK(kept > 0);
    CHECK(kept < candidates);
  }
}

TEST_CASE(
    "every key of a plan given a value of the wrong kind loads or is refused with a located line, never a crash") {
  const std::vector<std::string> keys = {"model",
                                         "hardware",
                                         "hardware.gpu",
                                         "hardware.gpus",
                                         "hardware.topology",
                                         "workload",
                                         "workload.global_batch",
                                         "workload.seq_len",
                                         "search",
                                         "search.tp",
                                         "search.pp",
                                         "search.micro_batch",
                                         "search.schedule",
                                         "search.recompute",
                                         "search.tp_mode",
                                         "search.data_parallel",
                                         "search.two_batch_overlap",
                                         "calibration"};
  test::check_wrong_kinds(kSmall, keys, [](const std::string& text) {
    const model::PlanSpec spec = model::parse_plan(text, "p.yaml");
    plan::plan_gpus_per_node(spec);
    plan::plan_arch(spec);
  });
}

TEST_CASE("the simulation cache reuses a timeline for an identical program only, within its byte budget") {
  const sim::CostModel cost = test::h100_cost();
  const auto program = [](double bytes) {
    model::LayerGraph graph(8);
    model::ProgramBuilder b(graph, 2.0);
    b.collective("ag", model::CollectiveKind::kAllGather, bytes, "", {});
    return graph;
  };
  sim::SimulationCache cache;
  cache.install();
  const sim::Timeline first = sim::simulate(program(64e6), cost);
  const sim::Timeline again = sim::simulate(program(64e6), cost);
  CHECK(cache.stats().misses == 1);
  CHECK(cache.stats().hits == 1);
  CHECK(again.makespan_s == first.makespan_s);
  CHECK(again.spans.size() == first.spans.size());
  // The cache keeps no plans; a hit's are planned again, as the first run's were.
  REQUIRE(again.plans);
  REQUIRE(again.plans->size() == first.plans->size());
  CHECK(again.plans->front().steps == first.plans->front().steps);
  // Another size is another program; another context (the hardware the caller names) another key.
  const sim::Timeline other = sim::simulate(program(128e6), cost);
  CHECK(cache.stats().misses == 2);
  CHECK(other.makespan_s > first.makespan_s);
  const sim::SimulationCache::Key key = cache.key(program(64e6), cost, {});
  cache.set_context("ib-rail/2");
  CHECK(cache.key(program(64e6), cost, {}) != key);
  // Launch costs are part of the key.
  CHECK(cache.key(program(64e6), cost, sim::launch_costs(1e-6)) != cache.key(program(64e6), cost, {}));
  // A budget below one timeline keeps nothing.
  sim::SimulationCache tiny(1);
  tiny.store(key, first, 1.0);
  CHECK(!tiny.find(key).has_value());
}

TEST_CASE("a plan with an output folder journals its rows, and a rerun resumes from them without simulating") {
  const std::string path = test::plan_temp_file("small.yaml", kSmall);
  const std::string dir = test::plan_temp_file("journal", "");
  std::filesystem::remove(dir);
  const test::CommandResult first = test::run_tpsim("plan " + path + " -o " + dir + " --json -");
  REQUIRE(first.exit_code == 0);
  // Half the journal, as a kill would leave it: the rerun simulates the rest.
  const std::string journal = dir + "/journal.jsonl";
  std::string lines = test::read_file(journal);
  size_t cut = 0;
  for (int i = 0; i < 10; ++i) cut = lines.find('\n', cut) + 1;
  std::ofstream(journal, std::ios::trunc) << lines.substr(0, cut);
  const auto line_count = [&] {
    const std::string text = test::read_file(journal);
    return std::count(text.begin(), text.end(), '\n');
  };
  const auto first_lines = std::count(lines.begin(), lines.end(), '\n');
  REQUIRE(first_lines > 10);
  const test::CommandResult resumed = test::run_tpsim("plan " + path + " -o " + dir + " --json -");
  const auto resumed_lines = line_count();
  const test::CommandResult again = test::run_tpsim("plan " + path + " -o " + dir + " --json -");
  REQUIRE(resumed.exit_code == 0);
  const nlohmann::json a = nlohmann::json::parse(first.out), b = nlohmann::json::parse(resumed.out);
  const nlohmann::json c = nlohmann::json::parse(again.out);
  CHECK(a["rows"] == b["rows"]);
  CHECK(a["rows"] == c["rows"]);
  // Each job a run simulates appends its line: the rerun ran only some of the first run's jobs, the third none.
  CHECK(resumed_lines > 10);
  CHECK(resumed_lines - 10 < first_lines);
  CHECK(line_count() == resumed_lines);
  CHECK(c["programs"]["simulated"] == 0);
  std::filesystem::remove_all(dir);
  std::filesystem::remove(path);
}

TEST_CASE("a plan run as 3 shards and merged ranks its rows as the unsharded run does, byte for byte") {
  test::check_merge_of_plan(kSmall, 4);
}

TEST_CASE("plan merge refuses files of different plans naming the key, and a candidate in two files") {
  const std::string path = test::plan_temp_file("merge_bad.yaml", kSmall);
  // The same plan name (the file's), other bytes.
  const std::filesystem::path other_dir = test::plan_temp_file("merge_other", "");
  std::filesystem::remove(other_dir);
  std::filesystem::create_directory(other_dir);
  const std::string other = (other_dir / std::filesystem::path(path).filename()).string();
  std::ofstream(other) << kSmall << "calibration: default\n";
  REQUIRE(test::run_tpsim("plan " + path + " --shard 1/2 --json " + path + ".1.json").exit_code == 0);
  REQUIRE(test::run_tpsim("plan " + path + " --shard 2/2 --json " + path + ".2.json").exit_code == 0);
  REQUIRE(test::run_tpsim("plan " + other + " --shard 2/2 --json " + other + ".2.json").exit_code == 0);
  const test::CommandResult mixed = test::run_tpsim("plan merge " + path + ".1.json " + other + ".2.json");
  CHECK(mixed.exit_code == 2);
  CHECK(mixed.err.find(other + ".2.json: 'fingerprint' is") != std::string::npos);
  CHECK(std::count(mixed.err.begin(), mixed.err.end(), '\n') == 1);
  const test::CommandResult twice = test::run_tpsim("plan merge " + path + ".1.json " + path + ".1.json");
  CHECK(twice.exit_code == 2);
  CHECK(twice.err.find(path + ".1.json: candidate ") != std::string::npos);
  CHECK(twice.err.find(" is in " + path + ".1.json too") != std::string::npos);
  const test::CommandResult half = test::run_tpsim("plan merge " + path + ".1.json");
  CHECK(half.exit_code == 2);
  CHECK(half.err.find("merge the --json files of every shard") != std::string::npos);
  for (const std::string& file : {path, path + ".1.json", path + ".2.json"}) std::filesystem::remove(file);
  std::filesystem::remove_all(other_dir);
}

TEST_CASE("search.cp adds context-parallel layouts whose scenarios run with the sequence split over cp") {
  const model::PlanSpec spec = model::parse_plan(
      "model: llama-3.1-8b\nhardware: {gpu: h100-sxm, gpus: 8}\nworkload: {global_batch: 4, seq_len: 8192}\n"
      "search: {tp: [2], pp: [1], cp: [1, 2, 4], micro_batch: 1, recompute: full, tp_mode: sp, data_parallel: fsdp}\n",
      "p.yaml");
  const int per_node = plan::plan_gpus_per_node(spec);
  const std::vector<plan::Candidate> all = plan::enumerate_candidates(spec, plan::plan_arch(spec), per_node);
  // tp 2 on 8 GPUs: cp 1 (dp 4), cp 2 (dp 2), cp 4 (dp 1, FSDP over the 4 CP members): one layout each.
  REQUIRE(all.size() == 3);
  for (const plan::Candidate& c : all) {
    const model::Scenario s = model::parse_scenario(plan::scenario_text(spec, c, per_node), "p.yaml");
    INFO(plan::describe(c.layout));
    CHECK(s.parallelism.cp == c.layout.cp);
    CHECK(c.layout.tp * c.layout.pp * c.layout.dp * c.layout.cp == 8);
    CHECK(model::primary_pass(s.workload).new_tokens == 8192 / c.layout.cp);
    CHECK(s.workload.data_parallel.degree == c.layout.dp * c.layout.cp);
  }
  CHECK(plan::describe(all.back().layout).find("cp4") != std::string::npos);
  // A plan without the key keeps cp 1 alone: what it searched before.
  const model::PlanSpec plain = model::parse_plan(
      "model: llama-3.1-8b\nhardware: {gpu: h100-sxm, gpus: 8}\nworkload: {global_batch: 4, seq_len: 8192}\n"
      "search: {tp: [2], pp: [1], micro_batch: 1, recompute: full, tp_mode: sp, data_parallel: fsdp}\n",
      "p.yaml");
  CHECK(plan::enumerate_candidates(plain, plan::plan_arch(plain), per_node).size() == 1);
}

TEST_CASE("the plan's zero1 layouts shard the optimizer state: Llama-3.1-8B at tp 2 x dp 4 fits under zero1, not ddp") {
  // 4 billion parameters per GPU: DDP's 18 bytes each exceed the 80 GB H100; the distributed optimizer's 6 + 12/4 fit.
  const std::string path = test::plan_temp_file(
      "zero1.yaml",
      "model: llama-3.1-8b\nhardware: {gpu: h100-sxm, gpus: 8}\nworkload: {global_batch: 8, seq_len: 2048}\n"
      "search: {tp: 2, pp: 1, micro_batch: 1, recompute: selective, tp_mode: sp, "
      "data_parallel: [ddp, zero1]}\n");
  const test::CommandResult ranked = test::run_tpsim("plan " + path + " --json -");
  REQUIRE(ranked.exit_code == 0);
  const nlohmann::json plan = nlohmann::json::parse(ranked.out);
  REQUIRE(plan["rows"].size() == 1);
  CHECK(plan["rows"][0]["data_parallel"] == "zero1");
  const test::CommandResult explained = test::run_tpsim("plan " + path + " --explain 1");
  REQUIRE(explained.exit_code == 0);
  CHECK_THAT(explained.out, Catch::Matchers::Contains(
                                "distributed_optimizer: {overlap_grad_reduce: true, overlap_param_gather: true}"));
  std::filesystem::remove(path);
}
