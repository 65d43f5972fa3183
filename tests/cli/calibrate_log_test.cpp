// A plain all_reduce_perf log of 8 H100s calibrates with no flags: its GPU from the device lines, what NCCL
// ran per size from NCCL's tuner, a profile over the GPU's default one; `calibrate report` prints each row.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "base/units.hpp"
#include "cli/cli_support.hpp"
#include "input/profile/profile_reader.hpp"
#include "sim/cost/profile.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

// The truth the log is made of: every NCCL call pays 9 us, an LL ring step 0.6 us (NCCL's own constant, as
// one step count cannot tell the two apart) and moves at 30% of NVLink, NVLS 20 us at 55%.
constexpr double kCall_s = 9e-6, kLlStep_s = 0.6e-6, kLlEfficiency = 0.3;
constexpr double kNvlsLatency_s = 20e-6, kNvlsEfficiency = 0.55;
constexpr double kLink_Bps = 450e9;  // h100-sxm's NVLink, one direction
constexpr int kRanks = 8;

double true_seconds(double bytes) {
  // NCCL's tuner on 8 H100s: ring/LL up to 1 MiB, NVLS from 2 MiB (tests/sim/nccl_tuner_test.cpp).
  if (bytes <= 1024 * 1024) {
    return kCall_s + 2 * (kRanks - 1) * (kLlStep_s + bytes / (kRanks * kLink_Bps * kLlEfficiency));
  }
  return kCall_s + kNvlsLatency_s + bytes / (kLink_Bps * kNvlsEfficiency);
}

// An all_reduce_perf log as nccl-tests 2.13 prints it, 8 B to 8 GiB by doubling.
std::string all_reduce_log() {
  std::string log =
      "# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
      "validation: 1 graph: 0\n#\n# Using devices\n";
  for (int r = 0; r < kRanks; ++r) {
    log += "#  Rank  " + std::to_string(r) + " Group  0 Pid  41234 on    node01 device  " + std::to_string(r) + " [0x" +
           std::to_string(18 + r) + "] NVIDIA H100 80GB HBM3\n";
  }
  log += "node01:41234:41234 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n#\n";
  log +=
      "#                                                              out-of-place                       in-place\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
      "#wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";
  for (double bytes = 8; bytes <= 8.0 * 1024 * 1024 * 1024; bytes *= 2) {
    const double us = true_seconds(bytes) * 1e6;
    const double algbw = bytes / us / 1e3;
    const std::string cells = model::format_number("%.2f", us) + " " + model::format_number("%.2f", algbw) + " " +
                              model::format_number("%.2f", algbw * 2 * (kRanks - 1) / kRanks) + "      0 ";
    log += model::format_number("%12.0f", bytes) + " " + model::format_number("%12.0f", bytes / 4) +
           "     float     sum      -1 " + cells + cells + "\n";
  }
  log += "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 123.45\n#\n";
  return log;
}

std::string temp_folder() {
  const auto dir = std::filesystem::temp_directory_path() / ("tpsim_log_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace

TEST_CASE("a plain all_reduce_perf log of 8 H100s calibrates with no flags, over the H100's default profile") {
  const std::string dir = temp_folder();
  const std::string log = dir + "/all_reduce_perf.log";
  std::ofstream(log) << all_reduce_log();
  const auto run = test::run_tpsim("calibrate " + log + " -o " + dir + "/cluster.yaml");
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const std::string yaml = test::read_file(dir + "/cluster.yaml");
  CHECK_THAT(yaml, Contains("gpu: h100-sxm\nbase: h100-sxm\n"));
  const sim::CostProfile p = sim::load_profile_file(dir + "/cluster.yaml");
  CHECK(p.nccl_call_latency_s == Approx(kCall_s).epsilon(1e-3));
  REQUIRE(p.nccl_ll);
  CHECK(p.nccl_ll->link_efficiency == Approx(kLlEfficiency).epsilon(1e-3));
  CHECK(p.nccl_ll->step_latency_s == Approx(kLlStep_s).epsilon(1e-3));
  REQUIRE(p.nvls);
  CHECK(p.nvls->link_efficiency == Approx(kNvlsEfficiency).epsilon(1e-3));
  CHECK(p.nvls->step_latency_s == Approx(kNvlsLatency_s).epsilon(1e-3));
  // What the log cannot fit (GEMMs, the Simple ring) is the default profile's, and the profile says so.
  CHECK(p.gemm.efficiency == sim::default_profile("h100-sxm")->gemm.efficiency);
  CHECK(p.sources.at("nccl.ll.link_efficiency").fitted);
  CHECK_FALSE(p.sources.at("gemm.tile_m").fitted);
  std::filesystem::remove_all(dir);
}

TEST_CASE("calibrate report prints each row of an nccl-tests log, predicted as NCCL ran it, beside the measurement") {
  const std::string dir = temp_folder();
  const std::string log = dir + "/all_reduce_perf.log";
  std::ofstream(log) << all_reduce_log();
  const auto run = test::run_tpsim("calibrate report " + log);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.out, Contains("h100-sxm collective allreduce (measured as ring, protocol ll)") &&
                          Contains("h100-sxm collective allreduce (measured as nvls, protocol simple)"));
  // One row per size and placement: 31 sizes, twice.
  size_t rows = 0;
  for (size_t at = run.out.find(" B, 8 ranks |"); at != std::string::npos; at = run.out.find(" B, 8 ranks |", at + 1)) {
    ++rows;
  }
  CHECK(rows == 62);
  CHECK_THAT(run.out, Contains("all_reduce_perf.log:"));  // each row names its line
  std::filesystem::remove_all(dir);
}

TEST_CASE("calibrate refuses a log of a GPU without a preset, naming the device and the flag that attributes it") {
  const std::string dir = temp_folder();
  std::string text = all_reduce_log();
  for (size_t at = text.find("NVIDIA H100 80GB HBM3"); at != std::string::npos;
       at = text.find("NVIDIA H100 80GB HBM3")) {
    text.replace(at, 21, "NVIDIA L40S");
  }
  std::ofstream(dir + "/all_reduce_perf.log") << text;
  const auto run = test::run_tpsim("calibrate " + dir + "/all_reduce_perf.log -o " + dir + "/p.yaml");
  CHECK(run.exit_code == 2);
  CHECK_THAT(run.err, Contains("all_reduce_perf.log:4: device 'NVIDIA L40S'") && Contains("--measured-on"));
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  CHECK_FALSE(std::filesystem::exists(dir + "/p.yaml"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("calibrate without a base refuses measurements that leave a required section unfitted, naming them") {
  const std::string dir = temp_folder();
  const auto run =
      test::run_tpsim("calibrate calibrate/data/measurements/gemm_h100_bf16.jsonl --base none -o " + dir + "/p.yaml");
  CHECK(run.exit_code == 2);
  CHECK_THAT(run.err, Contains("fit no nccl, copy_engine section") && Contains("--base"));
  CHECK_FALSE(std::filesystem::exists(dir + "/p.yaml"));
  // The same GEMMs over the measured GPU's default profile (the default base) give a complete profile.
  const auto over = test::run_tpsim("calibrate calibrate/data/measurements/gemm_h100_bf16.jsonl -o " + dir + "/p.yaml");
  CHECK(over.exit_code == 0);
  CHECK_THAT(test::read_file(dir + "/p.yaml"), Contains("base: h100-sxm"));
  std::filesystem::remove_all(dir);
}
