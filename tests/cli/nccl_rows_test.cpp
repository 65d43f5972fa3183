// `tpsim predict collective`, with NCCL's own algorithm choice as the default, against the public NCCL rows:
// 8 H100s all-reduce / all-gather / reduce-scatter 1-512 MiB and the 8 H200 all-reduce sweep 32 KiB-16 GiB.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_support.hpp"

using namespace tpsim;

namespace {

struct Row {
  std::string collective;
  double bytes = 0;
  double seconds = 0;
  bool through_torch = false;  // timed through torch.distributed: its host time per call is in `seconds`
};

// The rows of a converted public file measured through NCCL (not the custom multimem kernels).
std::vector<Row> nccl_rows(const std::string& file) {
  std::vector<Row> rows;
  std::istringstream in(test::read_file(std::string(TPSIM_SOURCE_DIR) + "/calibrate/data/measurements/" + file));
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j["algorithm"] == "multimem" || j["ranks"] != 8) continue;
    rows.push_back(
        {j["collective"], j["bytes"], j["median_s"], j.value("timed_through", "nccl") == "torch.distributed"});
  }
  return rows;
}

struct Predicted {
  double device_s = 0;          // the call on the GPU, as nccl-tests times it
  double framework_host_s = 0;  // what torch.distributed adds on the host per NCCL call
  // The time of a row measured as `r` was.
  double as_timed(const Row& r) const { return device_s + (r.through_torch ? framework_host_s : 0.0); }
};

// The predicted time per size of one sweep run with the default algorithm (nccl).
std::map<double, Predicted> predicted(const std::string& gpu, const std::string& kind, const std::string& from,
                                      const std::string& to) {
  const auto run = test::run_tpsim("predict collective --gpu " + gpu + " --ranks 8 --kind " + kind + " -b " + from +
                                   " -e " + to + " -f 2 --json");
  REQUIRE(run.exit_code == 0);
  std::map<double, Predicted> out;
  const auto j = nlohmann::json::parse(run.out);
  for (const auto& p : j["points"]) out[p["bytes"].get<double>()] = {p["time_s"], p["framework_host_s"]};
  return out;
}

}  // namespace

TEST_CASE(
    "nccl predicts the 8x H100 NCCL all-reduce, all-gather and reduce-scatter rows within 15 percent, with "
    "torch.distributed's host time per call") {
  const std::vector<Row> rows = nccl_rows("collectives_h100_latency.jsonl");
  REQUIRE(rows.size() == 30);
  for (const std::string kind : {"allreduce", "allgather", "reducescatter"}) {
    const std::map<double, Predicted> times = predicted("h100-sxm", kind, "1MiB", "512MiB");
    for (const Row& r : rows) {
      if (r.collective != kind) continue;
      REQUIRE(r.through_torch);
      const double t = times.at(r.bytes).as_timed(r);
      INFO(kind << " " << r.bytes << " B: predicted " << t << " s, measured " << r.seconds << " s");
      CHECK(std::abs(t / r.seconds - 1) < 0.15);
    }
  }
}

TEST_CASE(
    "nccl predicts the 8x H200 all-reduce sweep from 32 KiB to 16 GiB within 15 percent, with torch.distributed's host "
    "time per call") {
  const std::vector<Row> rows = nccl_rows("allreduce_h200_busbw.jsonl");
  REQUIRE(rows.size() == 17);
  const std::map<double, Predicted> times = predicted("h200-sxm", "allreduce", "32KiB", "16GiB");
  for (const Row& r : rows) {
    REQUIRE(r.through_torch);
    const double t = times.at(r.bytes).as_timed(r);
    INFO(r.bytes << " B: predicted " << t << " s, measured " << r.seconds << " s");
    CHECK(std::abs(t / r.seconds - 1) < 0.15);
  }
}

TEST_CASE("nccl is the default algorithm of tpsim predict collective, and it never runs a custom kernel") {
  const auto nccl = test::run_tpsim("predict collective --kind allreduce -b 8 -e 16GiB -f 4 --json");
  REQUIRE(nccl.exit_code == 0);
  const auto sweep = nlohmann::json::parse(nccl.out);
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
