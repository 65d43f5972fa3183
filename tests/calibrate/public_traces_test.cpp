// Real public Kineto traces (tests/data/kineto, from Holistic Trace Analysis; NOTICE section 3): every activity
// is classified or listed, NCCL all-reduces become points of the sizes record_param_comms states, and what
// the traces cannot fit is said.
#include <catch2/catch.hpp>
#include <set>

#include "calibrate/trace/trace_analysis.hpp"
#include "calibrate/trace/trace_points.hpp"
#include "test_support.hpp"

using namespace tpsim;
using namespace tpsim::calibrate;
using Catch::Matchers::Contains;

namespace {

std::string data(const std::string& name) {
  return std::string(TPSIM_SOURCE_DIR) + "/tests/data/kineto/" + name;
}

}  // namespace

TEST_CASE("every GPU activity of a public trace is counted in a class, unclassified ones listed by name") {
  for (const char* name : {"hta_sampled_rank-0.json.gz", "hta_sampled_rank-1.json.gz", "hta_nccl_data_rank0.json.gz"}) {
    const KinetoTrace t = read_kineto_trace(data(name));
    const TraceAnalysis a = analyse_trace(t, test::gpu_preset("a100-sxm"));
    size_t counted = 0, listed = 0;
    for (const auto& [c, time] : a.by_class) counted += time.kernels;
    for (const auto& [n, time] : a.unclassified) listed += time.kernels;
    CHECK(counted == t.kernels.size());
    CHECK(listed == (a.by_class.count(KernelClass::kOther) ? a.by_class.at(KernelClass::kOther).kernels : 0));
  }
}

TEST_CASE("the two ranks of a public trace pair read with their rank, shapes and NCCL kernels") {
  // HTA's trace_filter pair: ranks 0 and 1 of a 128-rank job, record_shapes on, fp32 GEMMs, NCCL send/recv
  // kernels whose record_param_comms recorded no sizes (an older PyTorch).
  for (int rank : {0, 1}) {
    const KinetoTrace t = read_kineto_trace(data("hta_sampled_rank-" + std::to_string(rank) + ".json.gz"));
    CHECK(t.rank == rank);
    CHECK(t.world_size == 128);
    CHECK(t.record_shapes);
    size_t nccl = 0;
    for (const TraceKernel& k : t.kernels) nccl += classify_kernel(k) == KernelClass::kNccl;
    CHECK(nccl == 10);
    std::vector<std::string> why;
    const auto points = trace_points(t, "a100-sxm", why);
    CHECK(points.empty());
    std::string all;
    for (const std::string& w : why) all += w + "\n";
    CHECK_THAT(all, Contains("GEMMs in float") && Contains("10 NCCL kernels without record_param_comms sizes"));
  }
}

TEST_CASE(
    "a public trace's NCCL all-reduces become points of record_param_comms' sizes, ranks and the kernel's "
    "algorithm") {
  // HTA's nccl_parser_config trace (rank 0 of 2, A100): three steps of five gradient all-reduces, fp32, whose
  // In msg nelems are 2,049,000, 2,431,040, 6,563,840, 6,637,568 and 7,875,584 (read with Python's json).
  const KinetoTrace t = read_kineto_trace(data("hta_nccl_data_rank0.json.gz"));
  CHECK(t.device_name == "NVIDIA A100-PG509-200");
  std::vector<std::string> why;
  const auto points = trace_points(t, "a100-sxm-40gb", why);
  std::set<double> sizes;
  for (const Measurement& m : points) {
    REQUIRE(m.kind == "collective");
    CHECK(m.collective == "allreduce");
    CHECK(m.ranks == 2);
    CHECK(m.algorithm == "ring");
    CHECK(m.protocol == "ll");
    CHECK(m.details["calls"] == 3);
    CHECK(m.median_s <= m.p90_s);
    sizes.insert(m.bytes);
  }
  CHECK(sizes == std::set<double>{4.0 * 2049000, 4.0 * 2431040, 4.0 * 6563840, 4.0 * 6637568, 4.0 * 7875584});
  std::string all;
  for (const std::string& w : why) all += w + "\n";
  CHECK_THAT(all, Contains("6 NCCL broadcast calls") && Contains("without shapes"));
}
