// `tpsim calibrate report` against the public measurements: the accuracy bounds, in-sample and
// held out, read from the tables it prints (the tables docs/validation.md shows).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

// One table row: its group heading, the in-sample and held-out errors in percent (held-out NaN where
// the point was fitted) and its source line.
struct ReportRow {
  std::string group;
  double error_pct = 0;
  double held_out_pct = NAN;
  std::string source;
};

std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line.substr(1));
  std::string cell;
  while (std::getline(in, cell, '|')) {
    const size_t first = cell.find_first_not_of(' '), last = cell.find_last_not_of(' ');
    out.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
  }
  return out;
}

std::vector<ReportRow> report_rows(const std::string& report) {
  std::vector<ReportRow> rows;
  std::stringstream in(report);
  std::string line, group;
  while (std::getline(in, line)) {
    if (line.rfind("### ", 0) == 0) group = line.substr(4);
    // Data rows: a size in bytes and ranks, or a GEMM's M x N x K.
    if (line.rfind("| ", 0) != 0 || (line.find(" B, ") == std::string::npos && line.find(" x ") == std::string::npos)) {
      continue;
    }
    const std::vector<std::string> c = cells(line);
    REQUIRE(c.size() >= 7);
    ReportRow row{group, std::stod(c[3]), NAN, c[6]};
    if (c[4] != "(fitted)") row.held_out_pct = std::stod(c[5]);
    rows.push_back(row);
  }
  return rows;
}

const char* kH100Fit =
    "calibrate/data/measurements/gemm_h100_bf16.jsonl calibrate/data/measurements/collectives_h100_latency.jsonl "
    "calibrate/data/measurements/small_allreduce_h100.jsonl calibrate/data/measurements/p2p_bandwidth.jsonl "
    "calibrate/data/measurements/allreduce_multinode_busbw.jsonl";

}  // namespace

TEST_CASE("the H100 NCCL collectives from 1 MiB to 512 MiB and GEMMs are predicted within 15% and 10%, held out too") {
  const auto result = test::run_tpsim(std::string("calibrate report ") + kH100Fit + " --measured-on h100-sxm");
  REQUIRE(result.exit_code == 0);
  size_t nccl = 0, gemms = 0;
  for (const ReportRow& row : report_rows(result.out)) {
    INFO(row.group << " " << row.source);
    const bool gemm = row.source.rfind("gemm_h100_bf16.csv", 0) == 0;
    // TokenWeave's NCCL rows (its multimem kernels are not NCCL: groups measured as multimem).
    const bool nccl_row =
        row.source.rfind("collectives_h100_latency.csv", 0) == 0 && row.group.find("multimem") == std::string::npos;
    if (!gemm && !nccl_row) continue;
    const double bound = gemm ? 10.0 : 15.0;
    CHECK(std::abs(row.error_pct) < bound);
    if (!std::isnan(row.held_out_pct)) CHECK(std::abs(row.held_out_pct) < bound);
    ++(gemm ? gemms : nccl);
  }
  CHECK(nccl == 30);  // all-reduce, all-gather and reduce-scatter at 10 sizes each
  CHECK(gemms == 10);
}

TEST_CASE("the H200 all-reduce sweep from 32 KiB to 16 GiB is within 15% of the h200 profile's fit, held out too") {
  const auto result = test::run_tpsim(
      "calibrate report calibrate/data/measurements/allreduce_h200_busbw.jsonl "
      "calibrate/data/measurements/nvls_vs_ring_h200.jsonl --measured-on h200-sxm "
      "--base scenarios/presets/profiles/h100-sxm.yaml");
  REQUIRE(result.exit_code == 0);
  size_t sweep = 0, held_out = 0;
  for (const ReportRow& row : report_rows(result.out)) {
    if (row.source.rfind("allreduce_h200_busbw.csv", 0) != 0) continue;
    INFO(row.group << " " << row.source);
    CHECK(std::abs(row.error_pct) < 15.0);
    if (!std::isnan(row.held_out_pct)) {
      CHECK(std::abs(row.held_out_pct) < 15.0);
      ++held_out;
    }
    ++sweep;
  }
  CHECK(sweep == 17);  // 32 KiB to 1 GiB by powers of two, and 16 GiB
  CHECK(held_out >= 8);
}

TEST_CASE("calibrate report refuses a base profile it cannot read in one line") {
  const auto result = test::run_tpsim(
      "calibrate report calibrate/data/measurements/allreduce_h200_busbw.jsonl --base no/such/profile.yaml");
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, Contains("no/such/profile.yaml"));
  CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
  CHECK(result.out.empty());
}
