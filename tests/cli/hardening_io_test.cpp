// Reproducers of bad measurement, checkpoint and journal files and of special output paths (the hardening
// issue): bad input is refused with exit 2 and one located line; outputs reach FIFOs, devices and symlink
// targets without replacing them; a second writer into a sweep folder is refused.
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>
#include <vector>

#include "cli/refusal_support.hpp"
#include "shard/affinity.hpp"
#include "shard/checkpoint_support.hpp"
#include "shard/shard_support.hpp"

using namespace tpsim;
using test::check_refused;
namespace fs = std::filesystem;

namespace {

const std::string kGemm = R"({"kind":"gemm","gpu":"h100-sxm","n":4096,"k":4096,"dtype":"bf16","median_s":)";

// A two-point sweep of kSmallScenario, run into `dir`; returns the scenario's path.
std::string swept(const test::Scratch& s, const std::string& dir) {
  const std::string scenario = s.file("sweep.yaml", test::kSmallScenario + "sweep:\n  workload.batch: [1, 2]\n");
  REQUIRE(test::run_tpsim("sweep " + scenario + " -o " + dir + " -j 1").exit_code == 0);
  return scenario;
}

// `dir`'s journal with `edit` applied to its first line.
void edit_first_line(const std::string& dir, void (*edit)(nlohmann::json&)) {
  const std::string path = dir + "/journal.jsonl";
  std::string text = test::read_file(path);
  const size_t end = text.find('\n');
  nlohmann::json line = nlohmann::json::parse(text.substr(0, end));
  edit(line);
  text.replace(0, end, line.dump());
  std::ofstream(path) << text;
}

}  // namespace

TEST_CASE("measurement files with fractional dimensions, overflowing numbers or a non-object provenance") {
  const test::Scratch s("measurements");
  const std::string valid = kGemm + "1e-5, \"m\": 4096}\n" + kGemm + "2e-5, \"m\": 8192}\n";
  const std::string half = s.file("half.jsonl", kGemm + "1e-5, \"m\": 0.5}\n" + valid);
  check_refused(test::run_tpsim("calibrate " + half + " -o " + s.path("p.yaml")),
                half + ":1:", "\"m\" must be a positive integer");
  CHECK_FALSE(fs::exists(s.path("p.yaml")));
  const std::string huge = s.file("huge.jsonl", kGemm + "1e309, \"m\": 4096}\n" + valid);
  check_refused(test::run_tpsim("calibrate " + huge), huge + ":1:", "not valid JSON");
  const std::string provenance =
      s.file("provenance.jsonl", kGemm + "1e-5, \"m\": 4096, \"provenance\": \"x\"}\n" + valid);
  check_refused(test::run_tpsim("calibrate report " + provenance),
                provenance + ":1:", "\"provenance\" must be a JSON object");
}

TEST_CASE("checkpoints with wrapping offsets or mistyped config extras, and oversized layout searches") {
  const test::Scratch s("checkpoint");
  const std::string header =
      R"({"__metadata__":{"layers":"1","kv_groups":"2","neurons":"2"},"up.0":{"dtype":"F32","shape":[2,2],)"
      R"("data_offsets":[0,18446744073709551608]}})";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  const std::string wrapped = s.file("wrapped.safetensors", bytes + header + std::string(16, '\0'));
  check_refused(test::run_tpsim("shard layout " + wrapped + " --devices 2"), wrapped + ": tensor 'up.0'",
                "data_offsets must be [begin, end]");
  const std::string affinity = s.path("affinity.safetensors");
  shard::write_affinity(affinity, test::random_tables(2, 4, 8, 3));
  check_refused(test::run_tpsim("shard layout " + affinity + " --devices 2 --random-seeds 100000"),
                "--random-seeds 100000", "at most 10000 random layouts and restarts");
  const std::string dir = test::write_tiny_checkpoint("tpsim_hardening_tiny_" + std::to_string(::getpid()), {}, 5);
  // 512 token ids 1, 2, 3, 1, ... as little-endian uint32 (the tiny model's vocabulary is small; a calibration
  // needs a sequence of 256 tokens).
  std::string ids;
  for (int i = 0; i < 512; ++i) ids += std::string(1, static_cast<char>(1 + i % 3)) + std::string(3, '\0');
  const std::string tokens = s.file("tokens.bin", ids);
  // The tiny checkpoint's config.json states both keys: each is mistyped in place, then restored.
  const std::vector<std::pair<std::string, std::string>> mistyped = {
      {R"("rms_norm_eps": 1e-6)", R"("rms_norm_eps": "x")"},
      {R"("tie_word_embeddings": false)", R"("tie_word_embeddings": "yes")"}};
  const std::string original = test::read_file(dir + "/config.json");
  for (const auto& [valid, wrong] : mistyped) {
    std::string config = original;
    REQUIRE(config.find(valid) != std::string::npos);
    config.replace(config.find(valid), valid.size(), wrong);
    std::ofstream(dir + "/config.json") << config;
    check_refused(test::run_tpsim("shard affinity " + dir + " --tokens " + tokens + " -o " + s.path("a.st")),
                  dir + "/config.json:", wrong.substr(1, wrong.find('"', 1) - 1));
    CHECK_FALSE(fs::exists(s.path("a.st")));
  }
  std::ofstream(dir + "/config.json") << original;
  fs::remove_all(dir);
}

TEST_CASE("a merge refuses a non-empty folder and journal rows that a sweep cannot have written") {
  const test::Scratch s("merge");
  swept(s, s.path("a"));
  fs::create_directories(s.path("full"));
  s.file("full/x", "something");
  check_refused(test::run_tpsim("merge " + s.path("a") + " -o " + s.path("full")), s.path("full"), "not empty");
  const auto bad_row = [&](const std::string& name, void (*edit)(nlohmann::json&), const std::string& what) {
    fs::copy(s.path("a"), s.path(name));
    edit_first_line(s.path(name), edit);
    check_refused(test::run_tpsim("merge " + s.path(name) + " -o " + s.path(name + "_out")),
                  s.path(name) + "/journal.jsonl:1:", what);
    CHECK_FALSE(fs::exists(s.path(name + "_out")));
  };
  bad_row(
      "negative", [](nlohmann::json& l) { l["rows"][0]["time_s"] = -1; }, "\"time_s\" is -1");
  bad_row(
      "text", [](nlohmann::json& l) { l["rows"][0]["time_s"] = "fast"; }, "\"time_s\" is \"fast\"");
  bad_row(
      "index", [](nlohmann::json& l) { l["index"] = 2; }, "\"index\" is 2, not an integer below 2");
  // A plan candidate's first-run answer (its only key) must hold a finite number.
  bad_row(
      "first_run",
      [](nlohmann::json& l) {
        l["rows"][0] = {{"first_run_bound", "low"}};
      },
      "\"first_run_bound\" is \"low\", not a finite number");
}

TEST_CASE("a second sweep into a folder another one is writing is refused") {
  const test::Scratch s("lock");
  const std::string scenario = s.file("sweep.yaml", test::kSmallScenario + "sweep:\n  workload.batch: [1, 2]\n");
  fs::create_directories(s.path("out"));
  const int fd = ::open(s.path("out").c_str(), O_RDONLY | O_DIRECTORY);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);  // as a running sweep holds it
  check_refused(test::run_tpsim("sweep " + scenario + " -o " + s.path("out")), s.path("out"),
                "another tpsim sweep or merge is writing into this folder");
  CHECK_FALSE(fs::exists(s.path("out/sweep.json")));
  ::close(fd);
  CHECK(test::run_tpsim("sweep " + scenario + " -o " + s.path("out")).exit_code == 0);
}

TEST_CASE("outputs go through symlinks and into FIFOs and devices, and a failed stdout write fails the run") {
  const test::Scratch s("outputs");
  const std::string scenario = s.file("s.yaml", test::kSmallScenario);
  const std::string target = s.file("target.json", "old");
  fs::create_symlink(target, s.path("link.json"));
  REQUIRE(test::run_tpsim("run " + scenario + " -q --json " + s.path("link.json")).exit_code == 0);
  CHECK(fs::is_symlink(s.path("link.json")));
  CHECK(test::read_file(target).find("\"results\"") != std::string::npos);

  // A reader on the FIFO from the start (non-blocking, so a writer that never comes cannot hang the test).
  REQUIRE(::mkfifo(s.path("fifo").c_str(), 0600) == 0);
  const int fifo_fd = ::open(s.path("fifo").c_str(), O_RDONLY | O_NONBLOCK);
  std::atomic<bool> done{false};
  std::string piped;
  std::thread reader([&] {
    char buffer[4096];
    for (ssize_t n = 0; (n = ::read(fifo_fd, buffer, sizeof buffer)) != 0 || !done;) {
      if (n > 0) piped.append(buffer, static_cast<size_t>(n));
      if (n <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  const auto fifo = test::run_tpsim("run " + scenario + " -q --json " + s.path("fifo"));
  done = true;
  reader.join();
  ::close(fifo_fd);
  CHECK(fifo.exit_code == 0);
  CHECK(fs::is_fifo(s.path("fifo")));
  CHECK(piped.find("\"results\"") != std::string::npos);

  CHECK(test::run_tpsim("run " + scenario + " -q --json /dev/null").exit_code == 0);
  CHECK(fs::is_character_file("/dev/null"));
  const std::string command = std::string(TPSIM_BINARY) + " run " + scenario + " >/dev/full 2>" + s.path("err");
  const int status = std::system(command.c_str());
  CHECK(WEXITSTATUS(status) == 2);
  CHECK(test::read_file(s.path("err")).find("cannot write to standard output") != std::string::npos);
}

TEST_CASE("nccl-tests logs with non-finite times, negative sizes or a negative wrong count are refused at the row") {
  const test::Scratch s("nccl_log");
  const std::string log =
      test::read_file(std::string(TPSIM_SOURCE_DIR) + "/tests/fuzz/seeds/nccl_log/all_reduce_perf.log");
  const std::string row = "     1048576        262144     float     sum      -1    30.12   34.81   60.92      0";
  REQUIRE(log.find(row) != std::string::npos);
  // The first result row's line, counted in the log itself.
  const std::string line = std::to_string(std::count(log.begin(), log.begin() + log.find(row), '\n') + 1);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"30.12", "nan"}, {"30.12", "inf"}, {"1048576", "-1048576"}, {"60.92      0", "60.92     -1"}};
  const std::vector<std::string> named = {"is not a time in microseconds", "is not a time in microseconds",
                                          "is not a size in bytes", "is not a count of wrong elements"};
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string bad_row = row;
    bad_row.replace(bad_row.find(cases[i].first), cases[i].first.size(), cases[i].second);
    std::string text = log;
    text.replace(text.find(row), row.size(), bad_row);
    const std::string path = s.file("all_reduce_perf.log", text);
    check_refused(test::run_tpsim("calibrate " + path + " -o " + s.path("p.yaml")), path + ":" + line + ":", named[i]);
    CHECK_FALSE(fs::exists(s.path("p.yaml")));
  }
}
