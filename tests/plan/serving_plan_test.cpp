// tpsim plan of a serving deployment (workload.phase serve): the plan file's keys and errors, the candidates, KV-cache
// pruning, the latency targets and which one binds, the Pareto front, and --explain against tpsim run.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/input_error.hpp"
#include "cli/cli_support.hpp"
#include "input/gpu_reader.hpp"
#include "input/plan_file.hpp"
#include "model/scenario.hpp"
#include "plan/serving_latency.hpp"
#include "plan/serving_search.hpp"
#include "plan_test_support.hpp"

using namespace tpsim;

namespace {

// Llama-3.1-70B on 8 H100s: tp 1 cannot hold the weights (141 GB of bf16 over one 80 GB GPU); 2,048 and 4,096
// sequences per TP group cannot hold their KV cache at tp 4 or 8 (below).
const std::string kKvPlan =
    "model: llama-3.1-70b\n"
    "hardware: {gpu: h100-sxm, gpus: 8}\n"
    "workload: {phase: serve, context_len: 2048, gen_len: 256}\n"
    "search: {tp: [1, 4, 8], batch: [1, 8, 2048, 4096]}\n";

// DeepSeek-V3 with its experts over the 8 GPUs, one attention TP group per GPU, DeepEP, with and without two-batch
// overlap: the MoE path of a serving candidate.
const std::string kMoePlan =
    "model: deepseek-v3\n"
    "hardware: {gpu: h200-sxm, gpus: 8}\n"
    "implementation: sglang\n"
    "workload: {phase: serve, context_len: 2048, gen_len: 64, targets: {ttft_s: 2.0, tpot_s: 0.050}}\n"
    "search: {tp: 1, ep: 8, batch: 8, dtype: fp8, dispatcher: deepep, two_batch_overlap: [false, true]}\n";

plan::ServingRow point(size_t index, double tokens_per_s_per_user, double tokens_per_s_per_gpu) {
  plan::ServingRow row;
  row.index = index;
  row.tpot_s = 1.0 / tokens_per_s_per_user;
  row.tokens_per_s_per_gpu = tokens_per_s_per_gpu;
  return row;
}

// The ranked rows of `tpsim plan PLAN --json -` and each explained candidate's `tpsim run --json -` agree exactly.
void check_explained_rows(const std::string& path, size_t rows) {
  const test::CommandResult ranked = test::run_tpsim("plan " + path + " --json - --top " + std::to_string(rows));
  REQUIRE(ranked.exit_code == 0);
  const nlohmann::json plan = nlohmann::json::parse(ranked.out);
  REQUIRE(plan["rows"].size() == rows);
  for (const nlohmann::json& row : plan["rows"]) {
    const std::string index = std::to_string(row["index"].get<size_t>());
    const test::CommandResult explained = test::run_tpsim("plan " + path + " --explain " + index);
    REQUIRE(explained.exit_code == 0);
    INFO(explained.out);
    const std::string scenario = test::plan_temp_file("explained.yaml", explained.out);
    const test::CommandResult run = test::run_tpsim("run " + scenario + " --json -");
    REQUIRE(run.exit_code == 0);
    const nlohmann::json result = nlohmann::json::parse(run.out)["results"][0];
    // The generate's prefill and mean decode step as simulated, and the served latency from them.
    CHECK(result["ttft_s"].get<double>() == row["prefill_s"].get<double>());
    CHECK(result["tpot_s"].get<double>() == row["decode_step_s"].get<double>());
    const plan::ServedLatency served = plan::served_latency(
        value_named(model::kBatchingNames, plan["workload"]["batching"].get<std::string>()).value(), result["ttft_s"],
        result["tpot_s"], row["batch"], plan["workload"]["gen_len"]);
    CHECK(served.ttft_s == row["ttft_s"].get<double>());
    CHECK(served.tpot_s == row["tpot_s"].get<double>());
    CHECK(result["time_s"].get<double>() == row["time_s"].get<double>());
    CHECK(result["tokens_per_s_per_gpu"].get<double>() == row["tokens_per_s_per_gpu"].get<double>());
    std::filesystem::remove(scenario);
  }
}

}  // namespace

TEST_CASE("a serving plan of model, GPU, GPU count and phase serve loads with every default") {
  const model::PlanSpec spec = model::parse_plan(
      "model: llama-3.1-70b\nhardware: {gpu: h100-sxm, gpus: 8}\nworkload: {phase: serve}\n", "p.yaml");
  REQUIRE(spec.serving);
  CHECK(spec.serve.context_len == 2048);
  CHECK(spec.serve.gen_len == 256);
  CHECK_FALSE(spec.serve.ttft_s.has_value());
  CHECK_FALSE(spec.serve.tpot_s.has_value());
  CHECK(spec.serve.batching == model::Batching::kContinuous);
  CHECK(model::parse_plan("model: llama-3.1-70b\nhardware: {gpu: h100-sxm, gpus: 8}\n"
                          "workload: {phase: serve, batching: static}\n",
                          "p.yaml")
            .serve.batching == model::Batching::kStatic);
  const int per_node = plan::plan_gpus_per_node(spec);
  const std::vector<plan::ServingCandidate> all =
      plan::enumerate_serving_candidates(spec, plan::plan_arch(spec), per_node);
  // A dense model: tp 1, 2, 4, 8 (GPUs / tp replicas of each), batches 1 to 1,024 in powers of two, CUDA graphs on.
  CHECK(all.size() == 4 * 11);
  for (size_t i = 0; i < all.size(); ++i) {
    CHECK(all[i].index == i);
    CHECK(all[i].layout.ep == 1);
    CHECK(all[i].layout.cuda_graphs);
    CHECK(all[i].layout.tp_mode == "tp");
  }
  // DeepSeek-V3 on 8 GPUs: expert TP (ep 1) and each ep of a power of two that tp divides; the dispatcher and
  // two-batch overlap vary only where the experts are split (ep > 1).
  const model::PlanSpec moe = model::parse_plan(
      "model: deepseek-v3\nhardware: {gpu: h200-sxm, gpus: 8}\nworkload: {phase: serve}\n"
      "search: {dispatcher: [nccl, deepep], two_batch_overlap: [false, true]}\n",
      "p.yaml");
  // tp 1: ep 1, 2, 4, 8; tp 2: ep 1, 2, 4, 8; tp 4: ep 1, 4, 8; tp 8: ep 1, 8.
  const size_t split_meshes = 3 + 3 + 2 + 1, expert_tp_meshes = 4;
  CHECK(plan::enumerate_serving_candidates(moe, plan::plan_arch(moe), 8).size() ==
        (split_meshes * 4 + expert_tp_meshes) * 11);
}

TEST_CASE("bad serving plan files are refused with one located line naming what is valid") {
  const std::string m = "model: llama-3.1-70b\nhardware: {gpu: h100-sxm, gpus: 8}\n";
  const std::string ok = "workload: {phase: serve}\n";
  struct Case {
    std::string text, expect;
  };
  const std::vector<Case> cases = {
      {m + "workload: {phase: serve, prompt_len: 5}\n",
       "p.yaml:3:26: unknown key 'prompt_len' in workload (phase serve)"},
      {m + "workload: {phase: serve, global_batch: 5}\n", "p.yaml:3:26: unknown key 'global_batch'"},
      {m + "workload: {phase: serve, gen_len: 1}\n",
       "p.yaml:3:35: workload.gen_len (output tokens) must be an integer of at least 2"},
      {m + "workload: {phase: serve, context_len: 0}\n", "p.yaml:3:39: workload.context_len"},
      {m + "workload: {phase: serve, targets: {ttft: 2}}\n", "p.yaml:3:36: unknown key 'ttft' in workload.targets"},
      {m + "workload: {phase: serve, targets: {tpot_s: -1}}\n", "p.yaml:3:44: workload.targets.tpot_s"},
      {m + "workload: {phase: serve, targets: 2}\n", "p.yaml:3:35: workload.targets must be a mapping"},
      {m + "workload: {phase: decode}\n", "p.yaml:3:19: workload.phase"},
      {m + "workload: {phase: serve, batching: dynamic}\n", "p.yaml:3:36: workload.batching"},
      {m + ok + "search: {pp: 2}\n",
       "p.yaml:4:10: unknown key 'pp' in search (phase serve); valid keys: tp, ep, batch"},
      {m + ok + "search: {batch: 0}\n", "p.yaml:4:17: search.batch"},
      {m + ok + "search: {cuda_graphs: [true, true]}\n", "p.yaml:4:30: search.cuda_graphs names 'true' twice"},
      {m + ok + "implementation:\n", "p.yaml:4:1: implementation is empty"},
      {m + "workload: {global_batch: 8, seq_len: 2048}\nimplementation: vllm\n",
       "p.yaml:4:1: implementation is read by serving plans"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const std::string error = test::plan_error(c.text);
    CHECK(error.rfind(c.expect, 0) == 0);
    CHECK(error.find('\n') == std::string::npos);
  }
  // The implementation is checked where the plan names it.
  const model::PlanSpec bad = model::parse_plan(m + ok + "implementation: vllm-9\n", "p.yaml");
  CHECK_THROWS_WITH(plan::plan_arch(bad), Catch::StartsWith("p.yaml:4:17:"));
}

TEST_CASE("continuous batching serves each token after a decode step and its share of the prefills") {
  // 8 concurrent sequences of 256 output tokens, a batch prefill of 0.8 s and a 20 ms decode step.
  const plan::ServedLatency batch = plan::served_latency(model::Batching::kStatic, 0.8, 0.020, 8, 256);
  CHECK(batch.ttft_s == 0.8);  // the batch admitted at once: its prefill, then its decode steps
  CHECK(batch.tpot_s == 0.020);
  const plan::ServedLatency served = plan::served_latency(model::Batching::kContinuous, 0.8, 0.020, 8, 256);
  // Each sequence lives 256 iterations, so 8 / 256 of the batch's prefill runs per iteration: 0.8 / 256 s beside
  // the decode step. A new request waits half an iteration, then its own prefill (0.8 / 8 s) beside a decode step.
  const double iteration = 0.020 + 0.8 / 256;
  CHECK(served.tpot_s == Approx(iteration).epsilon(1e-15));
  CHECK(served.ttft_s == Approx(iteration / 2 + 0.020 + 0.8 / 8).epsilon(1e-15));
  // 512 sequences of 256 tokens: two start per iteration, and a new request's iteration prefills both.
  const plan::ServedLatency busy = plan::served_latency(model::Batching::kContinuous, 51.2, 0.020, 512, 256);
  const double busy_iteration = 0.020 + 51.2 / 256;
  CHECK(busy.ttft_s == Approx(busy_iteration / 2 + 0.020 + 2 * 51.2 / 512).epsilon(1e-15));
}

TEST_CASE("a serving candidate misses a target above it, and the binding target is the one nearest its limit") {
  model::ServingWorkload serve;
  serve.ttft_s = 2.0, serve.tpot_s = 0.050;
  // TTFT at half its target, TPOT at 80% of its: TPOT binds.
  const plan::TargetCheck tpot = plan::check_targets(serve, 1.0, 0.040);
  CHECK(tpot.meets);
  CHECK(tpot.binding == "tpot");
  CHECK(tpot.use == Approx(0.8).epsilon(1e-12));  // 0.040 / 0.050 in doubles
  CHECK(tpot.missed.empty());
  const plan::TargetCheck ttft = plan::check_targets(serve, 1.9, 0.010);
  CHECK(ttft.meets);
  CHECK(ttft.binding == "ttft");
  CHECK(ttft.use == Approx(0.95).epsilon(1e-12));
  // At its limit a target is met.
  CHECK(plan::check_targets(serve, 2.0, 0.050).meets);
  const plan::TargetCheck late = plan::check_targets(serve, 2.5, 0.010);
  CHECK_FALSE(late.meets);
  CHECK(late.missed == std::vector<std::string>{"ttft"});
  const plan::TargetCheck both = plan::check_targets(serve, 2.5, 0.100);
  CHECK(both.missed == std::vector<std::string>{"ttft", "tpot"});
  CHECK(both.binding == "tpot");  // 2x its limit against TTFT's 1.25x
  // Without targets every candidate meets them and none binds; with one target, that one binds.
  CHECK(plan::check_targets(model::ServingWorkload{}, 10.0, 1.0).meets);
  CHECK(plan::check_targets(model::ServingWorkload{}, 10.0, 1.0).binding.empty());
  model::ServingWorkload only_tpot;
  only_tpot.tpot_s = 0.020;
  CHECK(plan::check_targets(only_tpot, 100.0, 0.010).binding == "tpot");
}

TEST_CASE("the Pareto front of tokens/s per user against tokens/s per GPU marks exactly the undominated rows") {
  // (per user, per GPU): a (100, 10), b (50, 40), c (40, 30) below b on both, d (100, 5) below a in per-GPU only,
  // e (20, 40) below b in per-user only, f (50, 40) at b's point (both stay), g (10, 60) the most per GPU.
  std::vector<plan::ServingRow> rows = {point(0, 100, 10), point(1, 50, 40), point(2, 40, 30), point(3, 100, 5),
                                        point(4, 20, 40),  point(5, 50, 40), point(6, 10, 60)};
  plan::mark_pareto_front(rows);
  const std::vector<bool> expected = {true, true, false, false, false, true, true};
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO("row " << i);
    CHECK(rows[i].front == expected[i]);
  }
}

TEST_CASE(
    "serving candidates are pruned by memory where one sequence does not fit and by KV cache where the batch does "
    "not") {
  const model::PlanSpec spec = model::parse_plan(kKvPlan, "p.yaml");
  const int per_node = plan::plan_gpus_per_node(spec);
  const model::ArchSpec arch = plan::plan_arch(spec);
  const std::vector<plan::ServingCandidate> all = plan::enumerate_serving_candidates(spec, arch, per_node);
  REQUIRE(all.size() == 12);
  const model::Scenario probe = model::parse_scenario(plan::serving_scenario_text(spec, all[0], per_node), "p.yaml");
  const double usable = sim::usable_hbm_bytes(sim::resolve_gpu(probe));
  // By hand: the KV cache of 2,048 sequences at tp 8 (one of the 8 KV heads per GPU, 128 wide, K and V, 80 layers,
  // bf16, 2,048 + 256 tokens) alone exceeds the GPU; tp 1's weights alone (70.6 billion bf16 parameters) do too.
  const double kv_per_sequence_tp8 = 2.0 * 1 * 128 * 80 * 2 * (2048 + 256);
  REQUIRE(arch.kv_heads == 8);
  REQUIRE(arch.layers == 80);
  CHECK(2048 * kv_per_sequence_tp8 > usable);
  CHECK(70.6e9 * 2 > usable);
  std::map<std::string, int> reasons;
  for (const plan::ServingCandidate& c : all) {
    const plan::Verdict v = plan::check_serving_candidate(spec, c, per_node);
    INFO(plan::describe(c.layout) + ": " + v.reason + " " + v.detail);
    ++reasons[v.reason];
    const std::string expected = c.layout.tp == 1 ? "memory" : c.layout.batch >= 2048 ? "kv cache" : "";
    CHECK(v.reason == expected);
    if (!v.reason.empty()) CHECK(v.memory_bytes > usable);
  }
  CHECK(reasons["memory"] == 4);
  CHECK(reasons["kv cache"] == 4);
  CHECK(reasons[""] == 4);
  // The JSON's counts are those: the four kept candidates simulated.
  const std::string path = test::plan_temp_file("kv.yaml", kKvPlan);
  const test::CommandResult r = test::run_tpsim("plan " + path + " -j 2 --json -");
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["pruned"]["memory"] == 4);
  CHECK(j["pruned"]["kv cache"] == 4);
  CHECK(j["simulated"] == 4);
  std::filesystem::remove(path);
}

TEST_CASE("tpsim plan --explain N of a serving plan prints a generate scenario that tpsim run reproduces exactly") {
  // The shipped dense plan's top rows, and an MoE plan's expert-parallel candidates with and without two-batch overlap.
  check_explained_rows(std::string(TPSIM_SOURCE_DIR) + "/scenarios/plans/llama3-70b-8xh100-serve.yaml", 3);
  const std::string moe = test::plan_temp_file("moe.yaml", kMoePlan);
  check_explained_rows(moe, 2);
  const test::CommandResult explained = test::run_tpsim("plan " + moe + " --explain 1");
  CHECK_THAT(explained.out, Catch::Matchers::Contains("parallelism: {tp: 1, ep: 8}"));
  CHECK_THAT(explained.out, Catch::Matchers::Contains("moe: {dispatcher: deepep}"));
  CHECK_THAT(explained.out, Catch::Matchers::Contains("two_batch_overlap: true"));
  CHECK_THAT(explained.out, Catch::Matchers::Contains("implementation: sglang"));
  std::filesystem::remove(moe);
}

TEST_CASE("a serving plan ranks the rows that meet its targets by tokens/s per GPU and lists those that miss below") {
  const test::CommandResult r = test::run_tpsim("plan " + std::string(TPSIM_SOURCE_DIR) +
                                                "/scenarios/plans/llama3-70b-8xh100-serve.yaml -j 2 "
                                                "--json - --top 1000");
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& rows = j["rows"];
  const double ttft_target = j["targets"]["ttft_s"], tpot_target = j["targets"]["tpot_s"];
  size_t meeting = 0, front = 0;
  bool missed_seen = false;
  for (size_t i = 0; i < rows.size(); ++i) {
    const nlohmann::json& row = rows[i];
    INFO(row.dump());
    const double ttft = row["ttft_s"], tpot = row["tpot_s"];
    const bool meets = ttft <= ttft_target && tpot <= tpot_target;
    CHECK(row["meets_targets"] == meets);
    CHECK(row["binding_target"] == (ttft / ttft_target >= tpot / tpot_target ? "ttft" : "tpot"));
    if (meets) {
      CHECK_FALSE(missed_seen);  // every row that meets the targets comes before every row that misses one
      CHECK(row["rank"] == i + 1);
      ++meeting;
    } else {
      missed_seen = true;
      CHECK(row["rank"].is_null());
    }
    if (i > 0 && rows[i - 1]["meets_targets"] == row["meets_targets"]) {
      CHECK(rows[i - 1]["tokens_per_s_per_gpu"].get<double>() >= row["tokens_per_s_per_gpu"].get<double>());
    }
    // On the front exactly when no other row has at least as many tokens/s per user and per GPU, and more of one.
    bool dominated = false;
    for (const nlohmann::json& other : rows) {
      const double u = other["tokens_per_s_per_user"], g = other["tokens_per_s_per_gpu"];
      const double my_u = row["tokens_per_s_per_user"], my_g = row["tokens_per_s_per_gpu"];
      dominated = dominated || (u >= my_u && g >= my_g && (u > my_u || g > my_g));
    }
    CHECK(row["front"] == !dominated);
    front += row["front"].get<bool>() ? 1 : 0;
  }
  CHECK(meeting == j["meeting_targets"]);
  CHECK(meeting > 0);
  CHECK(missed_seen);
  CHECK(j["front"].size() == front);
}

TEST_CASE(
    "a serving plan with an output folder journals its rows, a rerun resumes from them, and tpsim plot draws its "
    "front") {
  const std::string path = test::plan_temp_file("moe-journal.yaml", kMoePlan);
  const std::string dir = test::plan_temp_file("journal", "");
  std::filesystem::remove(dir);
  const test::CommandResult first = test::run_tpsim("plan " + path + " -o " + dir + " --json -");
  const test::CommandResult again = test::run_tpsim("plan " + path + " -o " + dir + " --json -");
  REQUIRE(first.exit_code == 0);
  REQUIRE(again.exit_code == 0);
  const nlohmann::json a = nlohmann::json::parse(first.out), b = nlohmann::json::parse(again.out);
  CHECK(a["rows"] == b["rows"]);
  CHECK(a["front"] == b["front"]);
  CHECK(a["programs"]["simulated"].get<int>() > 0);
  CHECK(b["programs"]["simulated"] == 0);
  // tpsim plot draws the rows against the front.
  const std::string json = test::plan_temp_file("moe.json", first.out), figure = test::plan_temp_file("front.svg", "");
  const test::CommandResult plot = test::run_tpsim("plot " + json + " -o " + figure);
  CHECK(plot.exit_code == 0);
  CHECK_THAT(test::read_file(figure), Catch::Matchers::Contains("Pareto front"));
  std::filesystem::remove(json);
  std::filesystem::remove(figure);
  // A serving plan ranks by tokens/s per GPU only.
  const test::CommandResult time = test::run_tpsim("plan " + path + " --rank-by time");
  CHECK(time.exit_code == 2);
  CHECK_THAT(time.err, Catch::Matchers::Contains("a serving plan ranks by tokens"));
  std::filesystem::remove_all(dir);
  std::filesystem::remove(path);
}

TEST_CASE("a serving plan run as 3 shards and merged ranks its rows and draws its front as the unsharded run does") {
  test::check_merge_of_plan(kKvPlan, 2);
}

TEST_CASE("every key of a serving plan given a value of the wrong kind loads or is refused with a located line") {
  const std::vector<std::string> keys = {
      "implementation",    "workload.context_len", "workload.gen_len", "workload.targets",  "search.tp",
      "search.ep",         "search.batch",         "search.dtype",     "search.dispatcher", "search.two_batch_overlap",
      "search.cuda_graphs"};
  test::check_wrong_kinds(kMoePlan, keys, [](const std::string& text) {
    const model::PlanSpec spec = model::parse_plan(text, "p.yaml");
    const int per_node = plan::plan_gpus_per_node(spec);
    plan::enumerate_serving_candidates(spec, plan::plan_arch(spec), per_node);
  });
}
