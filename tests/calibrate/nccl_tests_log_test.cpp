// nccl-tests logs of several shapes import to the right sizes, times, ranks and bus bandwidths.
#include <catch2/catch.hpp>

#include "base/device_names.hpp"
#include "base/input_error.hpp"
#include "calibrate/sources/nccl_inference.hpp"
#include "calibrate/sources/nccl_tests_log.hpp"
#include "test_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

std::string rank_lines(int ranks, int per_node) {
  std::string out;
  for (int r = 0; r < ranks; ++r) {
    out += "#  Rank " + std::to_string(r) + " Group  0 Pid  4123 on  node0" + std::to_string(r / per_node) +
           " device  " + std::to_string(r % per_node) + " [0x18] NVIDIA H100 80GB HBM3\n";
  }
  return out;
}

}  // namespace

TEST_CASE("a single-node all_reduce_perf log imports every size in both placements") {
  const std::string log =
      "# Collective test starting: all_reduce_perf\n"
      "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 4194304 step: 4(factor) warmup iters: 5 iters: 20\n"
      "#\n# Using devices\n" +
      rank_lines(8, 8) +
      "node01:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
      "#wrong\n"
      "     1048576        262144     float     sum      -1    30.12   34.81   60.92      0    29.87   35.10   61.43   "
      "   0\n"
      "     4194304       1048576     float     sum      -1    48.50   86.48  151.34      0    48.11   87.18  152.57   "
      "   0\n"
      "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 106.57\n#\n";
  const auto m = calibrate::parse_nccl_tests_log(log, "run.log", "h100-sxm");
  REQUIRE(m.size() == 4);
  CHECK(m[0].collective == "allreduce");
  CHECK(m[0].ranks == 8);
  CHECK(m[0].bytes == 1048576);
  CHECK(m[0].median_s == Approx(30.12e-6));
  CHECK(m[1].median_s == Approx(29.87e-6));  // in-place
  CHECK(m[1].provenance["placement"] == "in-place");
  // busbw recomputed from size and time matches what nccl-tests printed (2(n-1)/n for all-reduce).
  CHECK(m[2].busbw_GBps() == Approx(151.34).epsilon(2e-3));
  CHECK(m[0].provenance["device"] == "NVIDIA H100 80GB HBM3");
  CHECK(m[0].provenance["nodes"] == 1);
}

TEST_CASE("an older all_gather log without redop and root, across nodes, with unchecked results") {
  const std::string log =
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5\n" + rank_lines(16, 8) +
      "#       size         count      type     time   algbw   busbw  error     time   algbw   busbw  "
      "error\n"
      "   536870912       8388608     float    2805.1  191.39  179.43    N/A    2801.7  191.62  179.65"
      "    N/A\n"
      "node02:9:9 [1] NCCL WARN some warning line\n";
  const auto m = calibrate::parse_nccl_tests_log(log, "logs/all_gather_perf.out", "h100-sxm");
  REQUIRE(m.size() == 2);
  CHECK(m[0].collective == "allgather");  // from the file name
  CHECK(m[0].ranks == 16);
  CHECK(m[0].provenance["nodes"] == 2);
  CHECK(m[0].nodes == 2);                                    // fits the network section, not the NVLink ring
  CHECK(m[0].correct);                                       // "N/A": not checked, not wrong
  CHECK(m[0].busbw_GBps() == Approx(179.43).epsilon(2e-3));  // (n-1)/n for all-gather
}

TEST_CASE("a log run with NCCL_PROTO and NCCL_ALGO logged by NCCL records them as protocol and algorithm") {
  const std::string body =
      "# Collective test starting: all_gather_perf\n# nThread 1 nGpus 8\n" + rank_lines(8, 8) +
      "    1048576        32768     float    none      -1    20.00   52.43   45.88      0    19.0  "
      "55.19  48.29      0\n";
  const std::string forced =
      "node01:1:7 [0] NCCL INFO NCCL_PROTO set by environment to LL128\n"
      "node01:1:7 [0] NCCL INFO NCCL_ALGO set by environment to Ring\n";
  const auto m = calibrate::parse_nccl_tests_log(forced + body, "x.log", "h100-sxm");
  REQUIRE(m.size() == 2);
  CHECK(m[0].protocol == "ll128");
  CHECK(m[0].algorithm == "ring");
  CHECK(m[0].provenance["nccl_proto"] == "LL128");
  // A list leaves NCCL choosing; no such line leaves both unknown.
  const auto listed = calibrate::parse_nccl_tests_log(
      "x [0] NCCL INFO NCCL_PROTO set by environment to LL,LL128\n" + body, "x.log", "h100-sxm");
  CHECK(listed[0].protocol == "unknown");
  const auto plain = calibrate::parse_nccl_tests_log(body, "x.log", "h100-sxm");
  CHECK(plain[0].protocol == "unknown");
  CHECK(plain[0].algorithm == "unknown");
}

TEST_CASE("wrong results are kept but marked incorrect, and send/recv uses a bus factor of one") {
  const std::string log =
      "# Collective test starting: sendrecv_perf\n# nThread 1 nGpus 2\n" + rank_lines(2, 2) +
      "    33554432       8388608     float     sum      -1    95.00  353.21  353.21      3    94.0  "
      "356.97  356.97      0\n";
  const auto m = calibrate::parse_nccl_tests_log(log, "x.log", "h100-sxm");
  REQUIRE(m.size() == 2);
  CHECK_FALSE(m[0].correct);
  CHECK(m[1].correct);
  CHECK(m[0].busbw_GBps() == Approx(m[0].algbw_GBps()));
}

TEST_CASE("text that is not an nccl-tests log, or lacks what it needs, is rejected") {
  CHECK_THROWS_WITH(calibrate::parse_nccl_tests_log("hello\n", "notes.txt", "h100-sxm"),
                    Contains("notes.txt: not an nccl-tests log"));
  CHECK_THROWS_WITH(calibrate::parse_nccl_tests_log("# nThread 1\n" + rank_lines(8, 8), "perf.log", "h100-sxm"),
                    Contains("cannot tell which collective"));
  CHECK_THROWS_WITH(calibrate::parse_nccl_tests_log("# nThread 1\n", "all_reduce.log", "h100-sxm"),
                    Contains("number of GPUs"));
  CHECK_THROWS_WITH(calibrate::parse_nccl_tests_log("# nThread 1\n" + rank_lines(8, 8), "all_reduce.log", "h100-sxm"),
                    Contains("no result rows"));
}

TEST_CASE("device names map to the GPU presets that describe them, and other parts to none") {
  CHECK(calibrate::gpu_preset_of_device("NVIDIA H100 80GB HBM3") == "h100-sxm");
  CHECK(calibrate::gpu_preset_of_device("NVIDIA H200") == "h200-sxm");
  CHECK(calibrate::gpu_preset_of_device("NVIDIA H800") == "h800-sxm");
  CHECK(calibrate::gpu_preset_of_device("NVIDIA B200") == "b200");
  CHECK(calibrate::gpu_preset_of_device("NVIDIA A100-SXM4-80GB") == "a100-sxm");
  CHECK(calibrate::gpu_preset_of_device("NVIDIA A100-SXM4-40GB") == "a100-sxm-40gb");
  CHECK(calibrate::gpu_preset_of_device("NVIDIA H100 PCIe") == "h100-pcie");
  CHECK(calibrate::gpu_preset_of_device("NVIDIA H20") == "h20");
  for (const char* other : {"NVIDIA H100 NVL", "NVIDIA H200 NVL", "NVIDIA A100-PCIE-40GB", "NVIDIA GH200 480GB",
                            "NVIDIA L40S", "Tesla V100-SXM2-32GB"}) {
    INFO(other);
    CHECK_FALSE(calibrate::gpu_preset_of_device(other));
  }
  // A log's GPU comes from its device lines when no preset is given.
  const std::string log = "# Collective test starting: all_gather_perf\n# nThread 1 nGpus 8\n" + rank_lines(8, 8) +
                          "    1048576        32768     float    none      -1    20.00   52.43   45.88      0    19.0  "
                          "55.19  48.29      0\n";
  CHECK(calibrate::parse_nccl_tests_log(log, "x.log", "")[0].gpu == "h100-sxm");
}

TEST_CASE("a log whose ranks run on different GPUs is refused at the line of the second one") {
  std::string log = "# Collective test starting: all_gather_perf\n# nThread 1 nGpus 8\n" + rank_lines(8, 8) +
                    "    1048576        32768     float    none      -1    20.00   52.43   45.88      0    19.0  "
                    "55.19  48.29      0\n";
  const size_t last = log.rfind("NVIDIA H100 80GB HBM3");
  log.replace(last, 21, "NVIDIA H200");
  CHECK_THROWS_WITH(calibrate::parse_nccl_tests_log(log, "x.log", ""),
                    Contains("x.log:10: ranks run on different GPUs") && Contains("NVIDIA H200"));
}

TEST_CASE("an old all_reduce log (redop without root, the largest error instead of #wrong) imports by its header") {
  const std::string log =
      "# nThread 1 nGpus 8 minBytes 8 maxBytes 8388608 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"
      "#\n# Using devices\n" +
      rank_lines(8, 8) +
      "#\n#                                                     out-of-place                       in-place\n"
      "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "     8388608       2097152   float     sum    88.00   95.33  166.82  1e-07    87.00   96.42  168.74  2e-02\n";
  const auto m = calibrate::parse_nccl_tests_log(log, "all_reduce_perf.log", "");
  REQUIRE(m.size() == 2);
  CHECK(m[0].median_s == Approx(88e-6));
  CHECK(m[1].median_s == Approx(87e-6));
  CHECK(m[0].correct);        // a float sum's error of 1e-7
  CHECK_FALSE(m[1].correct);  // 2% off is wrong
  CHECK(m[0].busbw_GBps() == Approx(166.82).epsilon(2e-3));
}

TEST_CASE(
    "a log row with a non-finite or negative time, a fractional size or a negative #wrong is refused at its line") {
  const std::string head = "# Collective test starting: all_gather_perf\n# nThread 1 nGpus 8\n" + rank_lines(8, 8);
  const auto row = [&](const std::string& size, const std::string& time, const std::string& wrong) {
    return head + "    " + size + "        32768     float    none      -1    " + time + "   52.43   45.88      " +
           wrong + "    19.0  55.19  48.29      0\n";
  };
  CHECK(calibrate::parse_nccl_tests_log(row("1048576", "20.0", "0"), "x.log", "").size() == 2);
  CHECK_THROWS_WITH(calibrate::parse_nccl_tests_log(row("1048576", "nan", "0"), "x.log", ""),
                    Contains("x.log:11: column 6 is not a time"));
  CHECK_THROWS_WITH(calibrate::parse_nccl_tests_log(row("1048576", "inf", "0"), "x.log", ""), Contains("x.log:11:"));
  CHECK_THROWS_WITH(calibrate::parse_nccl_tests_log(row("1048576", "-3", "0"), "x.log", ""), Contains("x.log:11:"));
  CHECK_THROWS_WITH(calibrate::parse_nccl_tests_log(row("1048576.5", "20.0", "0"), "x.log", ""),
                    Contains("x.log:11: column 1 is not a size"));
  CHECK_THROWS_WITH(calibrate::parse_nccl_tests_log(row("1048576", "20.0", "-1"), "x.log", ""),
                    Contains("x.log:11: column 9 is not a count of wrong elements"));
}

TEST_CASE(
    "what a log does not name is NCCL's tuner choice, and a forced algorithm keeps it and takes NCCL's protocol") {
  const std::string body =
      "# Collective test starting: all_reduce_perf\n# nThread 1 nGpus 8\n" + rank_lines(8, 8) +
      "       65536        16384     float     sum      -1    20.00    3.28    5.73      0    19.0  "
      "3.45  6.04      0\n"
      "    67108864     16777216     float     sum      -1   400.00  167.77  293.60      0   399.0  "
      "168.19  294.34      0\n";
  const sim::GpuSpec h100 = test::gpu_preset("h100-sxm");
  auto plain = calibrate::parse_nccl_tests_log(body, "x.log", "");
  calibrate::infer_nccl_choices(plain, h100);
  CHECK(plain[0].algorithm == "ring");  // 64 KiB: ring/LL
  CHECK(plain[0].protocol == "ll");
  CHECK(plain[2].algorithm == "nvls");  // 64 MiB: NVLS/Simple
  CHECK(plain[2].protocol == "simple");
  CHECK_THAT(plain[0].provenance["nccl_choice"].get<std::string>(), Contains("ring/LL"));
  auto ring =
      calibrate::parse_nccl_tests_log("x [0] NCCL INFO NCCL_ALGO set by environment to Ring\n" + body, "x.log", "");
  calibrate::infer_nccl_choices(ring, h100);
  CHECK(ring[2].algorithm == "ring");   // forced
  CHECK(ring[2].protocol == "simple");  // NCCL's protocol for a 64 MiB ring
}

TEST_CASE(
    "a log run with CUDA graphs (-G, 'graph: N' in its header) is timed as the device's time, one without as "
    "nccl-tests times calls") {
  const auto log = [](const std::string& graph) {
    return "# Collective test starting: all_reduce_perf\n"
           "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20 agg "
           "iters: 1 validation: 1 graph: " +
           graph + "\n#\n# Using devices\n" + rank_lines(8, 8) +
           "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
           "busbw #wrong\n"
           "     1048576        262144     float     sum      -1    30.12   34.81   60.92      0    29.87   35.10   "
           "61.43      0\n";
  };
  for (const auto& m : calibrate::parse_nccl_tests_log(log("20"), "run.log", "h100-sxm")) CHECK(m.timed_as == "graph");
  for (const auto& m : calibrate::parse_nccl_tests_log(log("0"), "run.log", "h100-sxm")) {
    CHECK(m.timed_as == "nccl-tests");
  }
}
