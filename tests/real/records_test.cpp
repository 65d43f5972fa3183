// tpsim-real's JSON lines: every kind it writes reads back through calibrate/'s schema unchanged, and
// the output file appears only when the run ends well.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "base/input_error.hpp"
#include "base/measurement.hpp"
#include "real/core/measurement_log.hpp"
#include "real/core/points.hpp"
#include "real/core/provenance.hpp"

using namespace tpsim::real;
using tpsim::calibrate::Measurement;

namespace {

PointContext context() {
  Provenance p = host_provenance({"tpsim-real", "gemm", "--shape", "64x64x64"});
  p.device.name = "NVIDIA H200";
  p.device.sm_count = 132;
  return PointContext{"h200-sxm", to_json(p),  summarize({1e-3, 1.1e-3, 0.9e-3, 1.05e-3}), 4, 2e-3, true,
                      {},         std::nullopt};
}

Measurement round_trip(const Measurement& m) {
  return tpsim::calibrate::parse_measurement(tpsim::calibrate::to_json(m).dump(), "test:1");
}

}  // namespace

TEST_CASE("a GEMM point validates against the schema and keeps its timing and check", "[real][records]") {
  const GemmCase shape{8192, 3584, 4096, 1, "tp L0.ffn.gate_up_proj"};
  const Measurement back = round_trip(gemm_point(context(), shape, "bf16"));
  CHECK(back.kind == "gemm");
  CHECK(back.gpu == "h200-sxm");
  CHECK(back.m == 8192);
  CHECK(back.n == 3584);
  CHECK(back.k == 4096);
  CHECK(back.median_s == Approx(1.025e-3));
  CHECK(back.tflops() == Approx(2.0 * 8192 * 3584 * 4096 / 1.025e-3 / 1e12));
  CHECK(back.details["launches_per_sample"] == 4);
  CHECK(back.details["check_error"] == Approx(2e-3));
  CHECK(back.provenance["device"] == "NVIDIA H200");
  CHECK(back.provenance["arguments"].size() == 4);
}

TEST_CASE("collective points carry nccl-tests' algbw and busbw", "[real][records]") {
  const Measurement m = collective_point(context(), Collective::kAllGather, 8, 1 << 20, "float32", true);
  const nlohmann::ordered_json j = tpsim::calibrate::to_json(m);
  const double algbw = (1 << 20) / 1.025e-3 / 1e9;
  CHECK(j["algbw_GBps"].get<double>() == Approx(algbw));
  CHECK(j["busbw_GBps"].get<double>() == Approx(algbw * 7 / 8));
  const Measurement back = round_trip(m);
  CHECK(back.collective == "allgather");
  CHECK(back.ranks == 8);
  CHECK(back.details["in_place"] == true);
}

TEST_CASE("memcpy points count HBM traffic twice for copies within a GPU", "[real][records]") {
  const Measurement m = memcpy_point(context(), "device", 1 << 30);
  CHECK(m.details["hbm_GBps"].get<double>() == Approx(2.0 * (1 << 30) / 1.025e-3 / 1e9));
  CHECK(round_trip(m).path == "device");
  CHECK_FALSE(memcpy_point(context(), "peer", 1 << 30).details.contains("hbm_GBps"));
  Measurement pull = memcpy_point(context(), "peer_all_ranks", 1 << 28);
  pull.ranks = 8;
  CHECK_FALSE(pull.details.contains("hbm_GBps"));
  CHECK(round_trip(pull).ranks == 8);
}

TEST_CASE("composite points read back with their baselines and speedups", "[real][records]") {
  const GemmCase shape{8192, 8192, 8192, 1, ""};
  const OverlapTimes t{summarize({1.0e-3}), summarize({0.5e-3}), summarize({1.2e-3})};
  const Measurement overlap = round_trip(overlap_point(context(), shape, "bf16", "copy_kernel", 256 << 20, 1, t));
  CHECK(overlap.kind == "overlap");
  CHECK(overlap.baseline_s == Approx(1.5e-3));
  CHECK(overlap.gemm_overlapped_s == Approx(1.2e-3));
  CHECK(overlap.speedup() == Approx(1.5e-3 / 1.025e-3));

  const Measurement async = round_trip(
      async_tp_point(context(), shape, "bf16", "gemm_reducescatter", 8, 16, "copy_engine", summarize({2e-3})));
  CHECK(async.pattern == "gemm_reducescatter");
  CHECK(async.chunks == 16);
  CHECK(async.transport == "copy_engine");
  CHECK(async.speedup() == Approx(2e-3 / 1.025e-3));

  const Measurement dtp = round_trip(dtp_point(context(), shape, "bf16", 8, 12, 3, summarize({3e-3})));
  CHECK(dtp.modules == 12);
  CHECK(dtp.delta == 3);
  CHECK(dtp.baseline_s == Approx(3e-3));
  CHECK(tpsim::calibrate::to_json(dtp)["delta_convention"] == "scenario");
  CHECK(round_trip(dtp_point(context(), shape, "bf16", 8, 12, 0, summarize({3e-3}))).delta == 0);
}

TEST_CASE("dtp lines of the older delta convention are refused, not reinterpreted", "[real][records]") {
  const std::string old = R"({"kind":"dtp","gpu":"h200-sxm","m":64,"n":64,"k":64,"median_s":1e-3,"baseline_s":2e-3,)"
                          R"("pattern":"chain","ranks":8,"modules":8,"delta":1})";
  CHECK_THROWS_WITH(tpsim::calibrate::parse_measurement(old, "old.jsonl:4"),
                    Catch::StartsWith("old.jsonl:4: a dtp point without \"delta_convention\": \"scenario\" was "
                                      "written by an older tpsim-real, whose delta D is a scenario's D - 1"));
}

TEST_CASE("composite lines missing their baseline or with an unknown pattern are refused by name", "[real][records]") {
  const std::string base = R"({"kind":"async_tp","gpu":"h200-sxm","m":64,"n":64,"k":64,"median_s":1e-3,)";
  CHECK_THROWS_WITH(tpsim::calibrate::parse_measurement(
                        base + R"("pattern":"allgather_gemm","ranks":8,"chunks":8,"transport":"nccl"})", "f:3"),
                    "f:3: missing field \"baseline_s\"");
  CHECK_THROWS_WITH(
      tpsim::calibrate::parse_measurement(
          base + R"("baseline_s":2e-3,"pattern":"gemm_allreduce","ranks":8,"chunks":8,"transport":"nccl"})", "f:4"),
      "f:4: \"pattern\" must be one of allgather_gemm, gemm_reducescatter, got \"gemm_allreduce\"");
  CHECK_THROWS_WITH(
      tpsim::calibrate::parse_measurement(
          base + R"("baseline_s":2e-3,"pattern":"allgather_gemm","ranks":8,"chunks":0.5,"transport":"nccl"})", "f:5"),
      Catch::StartsWith("f:5: \"chunks\" must be an integer of at least 1"));
}

TEST_CASE("the JSON-lines file appears whole at the end, its lines in a .partial file until then", "[real][records]") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "tpsim_real_log_test";
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "points.jsonl").string();
  std::filesystem::remove(out);
  {
    MeasurementLog log(out);
    log.add(gemm_point(context(), GemmCase{64, 64, 64, 1, ""}, "bf16"));
    log.add(memcpy_point(context(), "copy_kernel", 4096));
    CHECK_FALSE(std::filesystem::exists(out));
    CHECK(std::filesystem::exists(out + ".partial"));
    log.finish();
  }
  CHECK_FALSE(std::filesystem::exists(out + ".partial"));
  const std::vector<Measurement> back = tpsim::calibrate::read_measurements(out);
  REQUIRE(back.size() == 2);
  CHECK(back[1].path == "copy_kernel");
  CHECK_THROWS_WITH(MeasurementLog((dir / "missing" / "x.jsonl").string()), Catch::Contains("cannot write here"));
}

TEST_CASE("a collective point is of the algorithm and protocol NCCL_ALGO and NCCL_PROTO force, else unknown",
          "[real][records]") {
  CHECK(algorithm_forced_by(nullptr) == "unknown");
  CHECK(algorithm_forced_by("Tree") == "tree");
  CHECK(algorithm_forced_by("RING") == "ring");
  CHECK(algorithm_forced_by("NVLS") == "nvls");
  CHECK(algorithm_forced_by("Ring,Tree") == "unknown");  // NCCL still chooses between them
  CHECK(algorithm_forced_by("^NVLS") == "unknown");
  CHECK(algorithm_forced_by("CollnetDirect") == "unknown");
  CHECK(protocol_forced_by(nullptr) == "unknown");
  CHECK(protocol_forced_by("LL128") == "ll128");
  CHECK(protocol_forced_by("LL") == "ll");
  CHECK(protocol_forced_by("Simple") == "simple");
  CHECK(protocol_forced_by("LL,LL128") == "unknown");  // NCCL still chooses between them
  CHECK(protocol_forced_by("^LL128") == "unknown");
}

TEST_CASE("a launch point is the whole chain's time, its per-kernel time in the details", "[real][records]") {
  const Measurement m = launch_point(context(), "cross_stream", 1000);
  const Measurement back = round_trip(m);
  CHECK(back.kind == "launch");
  CHECK(back.pattern == "cross_stream");
  CHECK(back.kernels == 1000);
  CHECK(back.median_s == m.median_s);
  CHECK(back.details["per_kernel_us"].get<double>() == Approx(m.median_s / 1000 * 1e6));
}
