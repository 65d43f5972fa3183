// A two-node all_reduce_perf log (tests/cli/data/all_reduce_perf_two_nodes.log, built from published multi-node
// numbers, its header says how): it calibrates into a profile `tpsim run` accepts, a fit whose value cannot be is
// refused in one line naming the value, why and what would fit it, `calibrate report` writes every row it can, and
// calibrate says which nccl-tests runs the profile still needs.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "cli/cli_support.hpp"
#include "input/profile/profile_reader.hpp"
#include "sim/cost/profile.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

const std::string kLog = "tests/cli/data/all_reduce_perf_two_nodes.log";

std::string temp_folder() {
  const auto dir = std::filesystem::temp_directory_path() / ("tpsim_two_node_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

// The log's result rows (sizes 8 B to 8 GiB by doubling), each timed out of place and in place.
size_t log_points() {
  std::ifstream in(std::string(TPSIM_SOURCE_DIR) + "/" + kLog);
  size_t rows = 0;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.find('#') == std::string::npos && line.find("float") != std::string::npos) ++rows;
  }
  return 2 * rows;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("a two-node all_reduce_perf log calibrates into a profile that tpsim run accepts across two nodes") {
  const std::string dir = temp_folder();
  const auto fit = test::run_tpsim("calibrate " + kLog + " -o " + dir + "/two.yaml");
  INFO(fit.err);
  REQUIRE(fit.exit_code == 0);
  // NCCL's tuner says tree for the small and mid sizes; tpsim's tree plan cannot carry them that fast (an efficiency
  // above 1): the tree fit is refused, in one line naming the value, and the profile keeps no tree section.
  CHECK(count(fit.err, "the tree fit is refused: tree.link_efficiency ") == 1);
  CHECK_THAT(fit.err, Contains("is above 1") && Contains("NCCL_ALGO=Tree"));
  const std::string yaml = test::read_file(dir + "/two.yaml");
  CHECK_THAT(yaml, Contains("# Refused: the tree fit is refused"));
  const sim::CostProfile profile = sim::load_profile_file(dir + "/two.yaml");
  CHECK_FALSE(profile.tree);
  REQUIRE(profile.network);  // the ring sizes fit the network section, a possible one
  CHECK(profile.network->link_efficiency <= 1);
  CHECK(profile.network->step_latency_s >= 0);
  // What the log could not fit: the runs that would.
  CHECK_THAT(fit.err, Contains("still to measure: all_gather_perf and reduce_scatter_perf") &&
                          Contains("still to measure: all_reduce_perf on two nodes or more with NCCL_ALGO=Tree"));
  // A job across the two nodes runs on it.
  std::ofstream(dir + "/job.yaml") << "name: two-node-ddp\nmodel: llama-3.1-8b\n"
                                      "hardware: {gpu: h100-sxm, topology: ib-rail, nodes: 2}\n"
                                      "calibration: two.yaml\n"
                                      "workload: {phase: train, batch: 1, seq_len: 2048, dtype: bf16, layers: 2}\n"
                                      "parallelism: {tp: 8, dp: 2}\nvariants:\n  - {name: sp, tp_mode: sp}\n";
  const auto run = test::run_tpsim("run " + dir + "/job.yaml");
  INFO(run.err);
  CHECK(run.exit_code == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("calibrate report on the two-node log writes every row, and says which fit it refused") {
  const auto report = test::run_tpsim("calibrate report " + kLog);
  INFO(report.err);
  REQUIRE(report.exit_code == 0);
  CHECK(count(report.out, "Refused: the tree fit is refused") == 1);
  // Every point is a row: predicted, or saying why it could not be.
  CHECK(count(report.out, " B, 16 ranks |") == log_points());
  CHECK(log_points() == 62);
}
