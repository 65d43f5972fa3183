// tpsim sweep / merge / plot: determinism across worker counts, resume after kill -9, shards and
// merge, crashed points, and plots.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "cli/cli_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// A fresh folder per test case (each runs in its own process).
std::string scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("tpsim_sweep_test_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir.parent_path());
  return dir.string();
}

std::string write_scenario(const std::string& dir, int points_per_axis) {
  fs::create_directories(dir);
  const std::string path = dir + "/sweep.yaml";
  std::string seq = "[";
  for (int i = 0; i < points_per_axis; ++i) seq += (i ? ", " : "") + std::to_string(512 << i);
  std::ofstream(path) << "name: small-sweep\nmodel: qwen3-0.6b\nhardware: {gpu: h100-sxm}\n"
                         "workload: {phase: forward, batch: 2, seq_len: 512, layers: 2}\nparallelism: {tp: 8}\n"
                         "variants:\n  - {name: sp, tp_mode: sp}\n  - {name: async, tp_mode: async, chunks: 8}\n"
                         "sweep:\n  workload.batch: [1, 2]\n  workload.seq_len: "
                      << seq << "]\n";
  return path;
}

size_t journal_lines(const std::string& dir) {
  const std::string text = test::read_file(dir + "/journal.jsonl");
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("a sweep writes one row per point and variant, byte-identical with one or two workers") {
  const std::string root = scratch("workers");
  const std::string scenario = write_scenario(root, 3);
  REQUIRE(test::run_tpsim("sweep " + scenario + " -o " + root + "/one -j 1").exit_code == 0);
  REQUIRE(test::run_tpsim("sweep " + scenario + " -o " + root + "/two -j 2").exit_code == 0);
  const std::string csv = test::read_file(root + "/one/results.csv");
  const size_t points = 2 * 3, variants = 2;
  CHECK(static_cast<size_t>(std::count(csv.begin(), csv.end(), '\n')) == 1 + points * variants);  // + header
  CHECK_THAT(csv, Contains("point,workload.batch,workload.seq_len,variant"));
  CHECK(csv == test::read_file(root + "/two/results.csv"));
  CHECK(test::read_file(root + "/one/results.jsonl") == test::read_file(root + "/two/results.jsonl"));
}

TEST_CASE("a sweep killed with SIGKILL resumes to exactly the rows of a clean run") {
  const std::string root = scratch("resume");
  const std::string scenario = write_scenario(root, 4);
  REQUIRE(test::run_tpsim("sweep " + scenario + " -o " + root + "/clean -j 1").exit_code == 0);

  const std::string out = root + "/killed";
  const pid_t child = ::fork();
  if (child == 0) {
    ::execl(TPSIM_BINARY, TPSIM_BINARY, "sweep", scenario.c_str(), "-o", out.c_str(), "-j", "1", "--no-progress",
            static_cast<char*>(nullptr));
    _exit(127);
  }
  // Kill it once it has finished at least one point (or give up waiting after 20 s).
  for (int i = 0; i < 2000 && (!fs::exists(out + "/journal.jsonl") || journal_lines(out) < 1); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  // A kill during a write leaves a torn last line: the resume must drop it.
  std::ofstream(out + "/journal.jsonl", std::ios::app) << R"({"tpsim_sweep":1,"fingerprint":"0)";
  const size_t finished_before = journal_lines(out);
  INFO("points finished before the kill: " << finished_before);

  const auto resumed = test::run_tpsim("sweep " + scenario + " -o " + out + " -j 2");
  REQUIRE(resumed.exit_code == 0);
  CHECK_THAT(resumed.err, Contains("from an earlier run"));
  CHECK(test::read_file(out + "/results.csv") == test::read_file(root + "/clean/results.csv"));
  CHECK(test::read_file(out + "/results.jsonl") == test::read_file(root + "/clean/results.jsonl"));
  CHECK(journal_lines(out) == 8);  // every point once: none lost, none duplicated
}

TEST_CASE("a sweep stopped with SIGTERM while a point simulates can be resumed at once") {
  const std::string root = scratch("sigterm");
  fs::create_directories(root);
  // One point whose simulation takes about a second and a half: the sweep is stopped while it runs.
  const std::string scenario = root + "/slow.yaml";
  std::ofstream(scenario) << "name: slow\nmodel: llama-3.1-70b\nhardware: {gpu: h100-sxm}\n"
                             "workload: {phase: train, batch: 1, seq_len: 4096, layers: 80, microbatches: 8}\n"
                             "parallelism: {tp: 8}\nvariants:\n  - {name: sp, tp_mode: sp}\n"
                             "sweep:\n  workload.batch: [1]\n";
  const std::string out = root + "/out";
  const pid_t child = ::fork();
  if (child == 0) {
    ::execl(TPSIM_BINARY, TPSIM_BINARY, "sweep", scenario.c_str(), "-o", out.c_str(), "-j", "1", "--no-progress",
            static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(child, SIGTERM);
  ::waitpid(child, nullptr, 0);
  // The sweep's workers and their simulations die with it: none of them keeps the folder locked.
  const auto resumed = test::run_tpsim("sweep " + scenario + " -o " + out + " -j 1");
  INFO("stderr: " << resumed.err);
  CHECK(resumed.exit_code == 0);
  CHECK(journal_lines(out) == 1);
}

TEST_CASE("shards merged give the result of a single run, and a missing shard is reported") {
  const std::string root = scratch("shards");
  const std::string scenario = write_scenario(root, 3);
  REQUIRE(test::run_tpsim("sweep " + scenario + " -o " + root + "/all").exit_code == 0);
  std::string dirs;
  for (int i = 1; i <= 3; ++i) {
    const std::string dir = root + "/shard" + std::to_string(i);
    REQUIRE(test::run_tpsim("sweep " + scenario + " -o " + dir + " --shard " + std::to_string(i) + "/3").exit_code ==
            0);
    CHECK(journal_lines(dir) == 2);  // 6 points over 3 shards
    dirs += " " + dir;
  }
  const auto partial = test::run_tpsim("merge " + root + "/shard1 " + root + "/shard2 -o " + root + "/partial");
  CHECK(partial.exit_code == 2);
  CHECK_THAT(partial.err, Contains("lack points 2, 5 of 6"));
  REQUIRE(test::run_tpsim("merge" + dirs + " -o " + root + "/merged").exit_code == 0);
  CHECK(test::read_file(root + "/merged/results.csv") == test::read_file(root + "/all/results.csv"));
  CHECK(test::read_file(root + "/merged/results.jsonl") == test::read_file(root + "/all/results.jsonl"));
}

TEST_CASE("a crashed point is reported with its inputs, the sweep goes on, and a rerun completes it") {
  const std::string root = scratch("crash");
  const std::string scenario = write_scenario(root, 2);
  const auto crashed = test::run_tpsim("sweep " + scenario + " -o " + root + "/out", "TPSIM_TEST_CRASH_POINT=1");
  CHECK(crashed.exit_code == 3);
  CHECK_THAT(crashed.err, Contains("point 1 workload.batch=1 workload.seq_len=1024: the worker process crashed"));
  CHECK(journal_lines(root + "/out") == 3);
  const auto rerun = test::run_tpsim("sweep " + scenario + " -o " + root + "/out");
  CHECK(rerun.exit_code == 0);
  CHECK(journal_lines(root + "/out") == 4);
}

TEST_CASE("a sweep folder of another scenario and bad shard arguments are refused") {
  const std::string root = scratch("refuse");
  const std::string scenario = write_scenario(root, 2);
  REQUIRE(test::run_tpsim("sweep " + scenario + " -o " + root + "/out").exit_code == 0);
  std::ofstream(scenario, std::ios::app) << "# edited\n";
  const auto edited = test::run_tpsim("sweep " + scenario + " -o " + root + "/out");
  CHECK(edited.exit_code == 2);
  CHECK_THAT(edited.err, Contains("another scenario"));
  const auto shard = test::run_tpsim("sweep " + scenario + " -o " + root + "/s --shard 4/3");
  CHECK(shard.exit_code == 2);
  CHECK_THAT(shard.err, Contains("expected i/N with 1 <= i <= N"));
}

TEST_CASE("tpsim plot draws speedup curves and breakdowns, and names valid axes on a bad one") {
  const std::string root = scratch("plot");
  const std::string scenario = write_scenario(root, 2);
  REQUIRE(test::run_tpsim("sweep " + scenario + " -o " + root + "/out").exit_code == 0);
  const std::string out = root + "/out";
  const auto curves =
      test::run_tpsim("plot " + out + " --x workload.seq_len --where workload.batch=2 -o " + root + "/a.svg");
  REQUIRE(curves.exit_code == 0);
  CHECK(fs::file_size(root + "/a.svg") > 1000);
  CHECK_THAT(test::read_file(root + "/a.svg"), Contains("<svg"));
  REQUIRE(test::run_tpsim("plot " + out + " --x workload.seq_len --where workload.batch=2 -o " + root + "/b.svg")
              .exit_code == 0);
  CHECK(test::read_file(root + "/a.svg") == test::read_file(root + "/b.svg"));
  CHECK(test::run_tpsim("plot " + out + " --breakdown --point 1 -o " + root + "/c.png").exit_code == 0);
  CHECK(fs::file_size(root + "/c.png") > 1000);
  CHECK(test::read_file(root + "/c.png").substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
  const auto bad = test::run_tpsim("plot " + out + " --x workload.bach -o " + root + "/d.png");
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Contains("unknown axis 'workload.bach'; valid: variant, workload.batch, workload.seq_len"));
  const auto ambiguous = test::run_tpsim("plot " + out + " --x workload.seq_len -o " + root + "/e.png");
  CHECK(ambiguous.exit_code == 2);
  CHECK_THAT(ambiguous.err, Contains("--where workload.batch=VALUE"));
}

TEST_CASE("a plot names the baseline its speedups are over, labels its axes with units, and shows auto's chunks") {
  const std::string root = scratch("plot_labels");
  fs::create_directories(root);
  const std::string scenario = root + "/auto.yaml";
  std::ofstream(scenario) << "model: qwen3-0.6b\nhardware: {gpu: h100-sxm}\n"
                             "workload: {phase: forward, batch: 1, seq_len: 512, layers: 1}\nparallelism: {tp: 8}\n"
                             "variants: [{name: sp, tp_mode: sp}, {name: async, tp_mode: async, chunks: auto}]\n"
                             "sweep:\n  workload.seq_len: [512, 4096]\n";
  REQUIRE(test::run_tpsim("sweep " + scenario + " -o " + root + "/out").exit_code == 0);
  // Only the async rows are drawn: their speedups are still over sp, the sweep's first variant.
  REQUIRE(test::run_tpsim("plot " + root + "/out --x workload.seq_len --where variant=async -o " + root + "/p.svg")
              .exit_code == 0);
  const std::string svg = test::read_file(root + "/p.svg");
  CHECK_THAT(svg, Contains("baseline: sp") && Contains("speedup over sp (x)"));
  CHECK_THAT(svg, !Contains("baseline: async"));
  CHECK_THAT(svg, Contains("sequence length (tokens)"));
  // Each point of async carries the chunk count auto chose there, as the results say.
  const std::string jsonl = test::read_file(root + "/out/results.jsonl");
  std::set<std::string> chosen;
  std::istringstream lines(jsonl);
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json row = nlohmann::json::parse(line);
    if (row["variant"] == "async") chosen.insert(std::to_string(row["chunks"].get<int>()));
  }
  REQUIRE(!chosen.empty());
  CHECK_THAT(svg, Contains("labels: chunks auto chose"));
  for (const std::string& chunks : chosen) CHECK_THAT(svg, Contains(">" + chunks + "<"));
}

TEST_CASE("a plot over named values (GPUs) keeps the sweep's order, not the alphabet's") {
  const std::string root = scratch("plot_names");
  fs::create_directories(root);
  const std::string scenario = root + "/gpus.yaml";
  std::ofstream(scenario) << "model: qwen3-0.6b\nhardware: {gpu: h100-sxm}\n"
                             "workload: {phase: forward, batch: 1, seq_len: 512, layers: 1}\nparallelism: {tp: 8}\n"
                             "variants: [{name: sp, tp_mode: sp}, {name: async, tp_mode: async, chunks: 8}]\n"
                             "sweep:\n  hardware.gpu: [h200-sxm, a100-sxm, b200]\n";
  REQUIRE(test::run_tpsim("sweep " + scenario + " -o " + root + "/out").exit_code == 0);
  REQUIRE(test::run_tpsim("plot " + root + "/out --x hardware.gpu -o " + root + "/p.svg").exit_code == 0);
  const std::string svg = test::read_file(root + "/p.svg");
  const size_t h200 = svg.find(">h200-sxm<"), a100 = svg.find(">a100-sxm<"), b200 = svg.find(">b200<");
  REQUIRE(h200 != std::string::npos);
  REQUIRE(a100 != std::string::npos);
  REQUIRE(b200 != std::string::npos);
  CHECK(h200 < a100);
  CHECK(a100 < b200);
}

TEST_CASE("an invalid combination in a sweep is reported with its values and the rest complete") {
  const std::string root = scratch("invalid");
  fs::create_directories(root);
  const std::string scenario = root + "/tp.yaml";
  std::ofstream(scenario) << "model: qwen2-7b\nhardware: {gpu: h100-sxm}\n"
                             "workload: {phase: forward, batch: 1, seq_len: 512, layers: 1}\nparallelism: {tp: 4}\n"
                             "variants: [{name: tp, tp_mode: tp}]\nsweep:\n  parallelism.tp: [2, 8, 4]\n";
  const auto result = test::run_tpsim("sweep " + scenario + " -o " + root + "/out");
  CHECK(result.exit_code == 3);
  // qwen2-7b has 28 query heads: tp = 8 does not divide them.
  CHECK_THAT(result.err,
             Contains("point 1 parallelism.tp=8: invalid: " + scenario + ":7:23:") && Contains("28 query heads"));
  CHECK(journal_lines(root + "/out") == 2);
}

TEST_CASE(
    "a variant above the GPU's HBM is marked in the table, JSON and CSV, drawn hollow, and refused by --require-fit") {
  const std::string root = scratch("memory");
  fs::create_directories(root);
  const std::string scenario = root + "/big.yaml";
  // 256 sequences of 8192 tokens through Llama-3.1-70B's layer at TP 8: about 150 GB of activations per GPU.
  std::ofstream(scenario) << "name: big\nmodel: llama-3.1-70b\nhardware: {gpu: h100-sxm}\n"
                             "workload: {phase: prefill, batch: 1, seq_len: 8192, layers: 1}\nparallelism: {tp: 8}\n"
                             "variants: [{name: tp, tp_mode: tp}, {name: sp, tp_mode: sp}]\n"
                             "sweep:\n  workload.batch: [1, 256]\n";
  const auto table = test::run_tpsim("run " + scenario);
  REQUIRE(table.exit_code == 0);
  CHECK_THAT(table.out, Contains("mem GiB") && Contains("! above the 79.11 GiB h100-sxm gives per GPU"));
  const auto refused = test::run_tpsim("run " + scenario + " --require-fit --json " + root + "/r.json");
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err,
             Contains("--require-fit: variant tp needs") && Contains("above the 79.11 GiB h100-sxm gives"));
  CHECK_FALSE(fs::exists(root + "/r.json"));
  REQUIRE(test::run_tpsim("sweep " + scenario + " -o " + root + "/out").exit_code == 0);
  const std::string csv = test::read_file(root + "/out/results.csv");
  CHECK_THAT(csv, Contains("memory_per_gpu_bytes,fits_memory") && Contains(",true\n") && Contains(",false\n"));
  // The CSV plots like the JSON lines; the point above the HBM is drawn hollow, and the figure says so.
  REQUIRE(test::run_tpsim("plot " + root + "/out/results.csv --x workload.batch -o " + root + "/p.svg").exit_code == 0);
  const std::string svg = test::read_file(root + "/p.svg");
  CHECK_THAT(svg, Contains("hollow: above the GPU") && Contains("baseline: tp"));
  const auto failed = test::run_tpsim("sweep " + scenario + " -o " + root + "/strict --require-fit");
  CHECK(failed.exit_code != 0);
  CHECK_THAT(failed.err, Contains("point 1 workload.batch=256") && Contains("--require-fit"));
}

TEST_CASE(
    "tpsim plot refuses unreadable results with one line: bad bytes, non-object rows, text for numbers, no folder") {
  const std::string root = scratch("plot_errors");
  fs::create_directories(root);
  std::ofstream(root + "/bytes.jsonl") << "\xff\xfe{}\n";
  std::ofstream(root + "/list.jsonl") << "[1, 2]\n";
  std::ofstream(root + "/text.jsonl") << R"({"variant": "a", "point": {"x": "1"}, "speedup": "fast"})"
                                      << "\n";
  for (const auto& [file, message] :
       std::vector<std::pair<std::string, std::string>>{{"bytes.jsonl", "not UTF-8"},
                                                        {"list.jsonl", "a result row is a JSON object"},
                                                        {"text.jsonl", "is not a number"}}) {
    INFO(file);
    const auto r = test::run_tpsim("plot " + root + "/" + file + " --x x -o " + root + "/p.png");
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains(message));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  const auto folder = test::run_tpsim("plot " + root + "/text.jsonl --x x -o " + root + "/missing/p.png");
  CHECK(folder.exit_code == 2);
  CHECK_THAT(folder.err, Contains("no folder"));
}
