// `tpsim predict collective`, with NCCL's own algorithm choice as the default, against the public NCCL rows, each in
// the mode that matches how it was timed (--as-called, the row's timed_as): 8 H100s all-reduce / all-gather /
// reduce-scatter 1-512 MiB (TokenWeave: calls queued behind a busy GPU, the device's time: graph), the 8 H200
// all-reduce sweep 32 KiB-16 GiB (all_reduce_bench.py: one call at a time through torch.distributed: torch) and the
// H200 nccl-tests rows at 16 GiB (nccl-tests); and what each mode adds to the device's time.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_support.hpp"

using namespace tpsim;

namespace {

// Every row's time is within this of the prediction in its mode: the bound for the public NCCL rows.
constexpr double kRowTolerance = 0.15;

struct Row {
  std::string collective;
  double bytes = 0;
  double seconds = 0;
  std::string timed_as;  // how the row was timed: nccl-tests, torch or graph
};

// The 8-rank rows of a converted public file measured through NCCL (not the custom multimem kernels).
std::vector<Row> nccl_rows(const std::string& file) {
  std::vector<Row> rows;
  std::istringstream in(test::read_file(std::string(TPSIM_SOURCE_DIR) + "/calibrate/data/measurements/" + file));
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j["algorithm"] == "multimem" || j["ranks"] != 8) continue;
    rows.push_back({j["collective"], j["bytes"], j["median_s"], j["timed_as"]});
  }
  return rows;
}

// The predicted points per size of one sweep run with the default algorithm (nccl), as `mode` times a call.
std::map<double, nlohmann::json> predicted(const std::string& gpu, const std::string& kind, const std::string& from,
                                           const std::string& to, const std::string& mode,
                                           const std::string& extra = "") {
  const auto run = test::run_tpsim("predict collective --gpu " + gpu + " --ranks 8 --kind " + kind + " -b " + from +
                                   " -e " + to + " -f 2 --json --as-called " + mode + " " + extra);
  REQUIRE(run.exit_code == 0);
  const auto j = nlohmann::json::parse(run.out);
  CHECK(j["as_called"] == mode);  // the JSON names the mode
  std::map<double, nlohmann::json> out;
  if (!j.contains("points")) out[j["bytes"].get<double>()] = j;  // one size: the point is the answer
  for (const auto& p : j.value("points", nlohmann::json::array())) out[p["bytes"].get<double>()] = p;
  return out;
}

// Every row of `rows` of collective `kind` against the sweep `from`-`to` in `mode`.
void check_rows(const std::vector<Row>& rows, const std::string& gpu, const std::string& kind, const std::string& from,
                const std::string& to, const std::string& mode, const std::string& extra = "") {
  const std::map<double, nlohmann::json> times = predicted(gpu, kind, from, to, mode, extra);
  for (const Row& r : rows) {
    if (r.collective != kind) continue;
    const double t = times.at(r.bytes)["time_s"];
    INFO(kind << " " << r.bytes << " B as " << mode << ": predicted " << t << " s, measured " << r.seconds << " s");
    CHECK(std::abs(t / r.seconds - 1) < kRowTolerance);
  }
}

}  // namespace

TEST_CASE("nccl predicts the 8x H100 NCCL rows within 15 percent as their device time, in graph and nccl-tests modes") {
  const std::vector<Row> rows = nccl_rows("collectives_h100_latency.jsonl");
  REQUIRE(rows.size() == 30);
  for (const Row& r : rows) REQUIRE(r.timed_as == "graph");  // queued behind a busy GPU: the device's time
  // nccl-tests' loop shows the device's time too wherever it is longer than the host's launch path, as every one of
  // these NCCL calls is (over 20 us against 4).
  for (const std::string mode : {"graph", "nccl-tests"}) {
    for (const std::string kind : {"allreduce", "allgather", "reducescatter"}) {
      check_rows(rows, "h100-sxm", kind, "1MiB", "512MiB", mode);
    }
  }
}

TEST_CASE("nccl predicts the 8x H200 all-reduce sweep within 15 percent as one call through torch.distributed") {
  const std::vector<Row> rows = nccl_rows("allreduce_h200_busbw.jsonl");
  REQUIRE(rows.size() == 17);
  for (const Row& r : rows) REQUIRE(r.timed_as == "torch");
  check_rows(rows, "h200-sxm", "allreduce", "32KiB", "16GiB", "torch");
}

TEST_CASE("nccl predicts the 8x H200 nccl-tests rows at 16 GiB within 15 percent as nccl-tests times them") {
  std::vector<Row> all_reduces, gathers;
  for (const Row& r : nccl_rows("nvls_vs_ring_h200.jsonl")) {
    if (r.timed_as != "nccl-tests" || r.bytes != 17179869184.0) continue;  // the 16 GiB rows of nccl-tests -g 8
    (r.collective == "allreduce" ? all_reduces : gathers).push_back(r);
  }
  REQUIRE(all_reduces.size() == 2);  // NVLS enabled (NCCL ran NVLS) and disabled (a ring): the faster is NVLS's
  REQUIRE(gathers.size() == 2);      // all-gather, reduce-scatter
  const bool nvls_first = all_reduces[0].seconds < all_reduces[1].seconds;
  check_rows({all_reduces[nvls_first ? 0 : 1]}, "h200-sxm", "allreduce", "16GiB", "16GiB", "nccl-tests");
  check_rows({all_reduces[nvls_first ? 1 : 0]}, "h200-sxm", "allreduce", "16GiB", "16GiB", "nccl-tests",
             "--algorithm ring");
  for (const std::string kind : {"allgather", "reducescatter"}) {
    check_rows(gathers, "h200-sxm", kind, "16GiB", "16GiB", "nccl-tests");
  }
}

TEST_CASE("each --as-called mode adds the host's time per call to the device's as that way of timing shows it") {
  // A profile whose host launch path (80 us) is longer than a small call's device time: nccl-tests' back-to-back
  // loop then shows the host's; one call through torch shows both, one after the other; a graph the device's alone.
  const std::string profile = (std::filesystem::temp_directory_path() / "tpsim_as_called_profile.yaml").string();
  std::ofstream(profile) << "gpu: h100-sxm\nbase: h100-sxm\nlaunch:\n  host_us: 80\n  collective_host_us: 15\n";
  const double host_s = 80e-6, torch_s = 15e-6;
  const auto graph = predicted("h100-sxm", "allreduce", "32KiB", "1GiB", "graph", "--calibration " + profile);
  const auto loop = predicted("h100-sxm", "allreduce", "32KiB", "1GiB", "nccl-tests", "--calibration " + profile);
  const auto torch = predicted("h100-sxm", "allreduce", "32KiB", "1GiB", "torch", "--calibration " + profile);
  std::filesystem::remove(profile);
  bool host_bound = false, device_bound = false;
  for (const auto& [bytes, g] : graph) {
    const double device_s = g["device_s"];
    INFO(bytes << " B, device " << device_s << " s");
    CHECK(g["time_s"].get<double>() == device_s);
    CHECK(g["host_s"].get<double>() == 0);
    CHECK(loop.at(bytes)["time_s"].get<double>() == Approx(std::max(device_s, host_s)).epsilon(1e-12));
    CHECK(torch.at(bytes)["time_s"].get<double>() == Approx(device_s + host_s + torch_s).epsilon(1e-12));
    host_bound = host_bound || device_s < host_s;
    device_bound = device_bound || device_s > host_s;
  }
  CHECK(host_bound);  // the sweep holds both sides of nccl-tests' max()
  CHECK(device_bound);
}

TEST_CASE("predict collective refuses an as-called mode it does not know in one line that lists the valid ones") {
  const auto run = test::run_tpsim("predict collective --bytes 1MiB --as-called eager");
  CHECK(run.exit_code == 2);
  CHECK(run.err == "tpsim: error: --as-called eager: valid: nccl-tests, torch, graph\n");
}

TEST_CASE("nccl is the default algorithm of tpsim predict collective, and it never runs a custom kernel") {
  const auto nccl = test::run_tpsim("predict collective --kind allreduce -b 8 -e 16GiB -f 4 --json");
  REQUIRE(nccl.exit_code == 0);
  const auto sweep = nlohmann::json::parse(nccl.out);
  CHECK(sweep["as_called"] == "nccl-tests");  // the default mode
  for (const auto& p : sweep["points"]) {
    INFO(p.dump());
    CHECK((p["algorithm"] == "ring" || p["algorithm"] == "nvls"));
    CHECK(p.contains("nccl_choice"));
  }
  // auto may take the custom one-shot kernel, and says it is no NCCL choice.
  const auto fastest = test::run_tpsim("predict collective --kind allreduce --bytes 64KiB --algorithm auto --json");
  const auto j = nlohmann::json::parse(fastest.out);
  CHECK(j["algorithm"] == "one_shot");
  CHECK_FALSE(j.contains("nccl_choice"));
}
