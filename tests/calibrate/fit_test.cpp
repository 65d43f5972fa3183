// The shipped default profiles equal the fit of the shipped measurement files (and their carrying to other GPUs), and
// measurement files and CSV tables are checked line by line.
#include <catch2/catch.hpp>
#include <fstream>

#include "base/measurement.hpp"
#include "base/units.hpp"
#include "calibrate/profile/profile_fit.hpp"
#include "calibrate/profile/profile_transfer.hpp"
#include "calibrate/sources/csv_table.hpp"
#include "calibrate/sources/public_convert.hpp"
#include "fit_support.hpp"
#include "input/profile/profile_reader.hpp"
#include "input/profile/profile_writer.hpp"
#include "model/graph/op.hpp"
#include "test_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

std::vector<calibrate::Measurement> default_fit_set() {
  std::vector<calibrate::Measurement> all;
  for (const char* file : {"gemm_h100_bf16.jsonl", "collectives_h100_latency.jsonl", "small_allreduce_h100.jsonl",
                           "p2p_bandwidth.jsonl", "allreduce_multinode_busbw.jsonl", "async_tp_trace_pulls.jsonl"}) {
    const auto some = calibrate::read_measurements(test::kMeasurements + file);
    all.insert(all.end(), some.begin(), some.end());
  }
  return all;
}

}  // namespace

TEST_CASE("the shipped default profiles are the fit of the shipped measurement files") {
  const calibrate::ProfileFit fit = calibrate::fit_profile(default_fit_set(), test::gpu_preset("h100-sxm"));
  // H200: the H100 fit with its NVLS fitted on the H200 sweep and the NVLS-on/off table.
  auto h200_sweep = calibrate::read_measurements(test::kMeasurements + "allreduce_h200_busbw.jsonl");
  const auto on_off = calibrate::read_measurements(test::kMeasurements + "nvls_vs_ring_h200.jsonl");
  h200_sweep.insert(h200_sweep.end(), on_off.begin(), on_off.end());
  const calibrate::ProfileFit h200 =
      calibrate::fit_profile(h200_sweep, test::gpu_preset("h200-sxm"), &fit.profile, "h100");
  REQUIRE(h200.profile.nvls);
  CHECK(test::profile_preset("h200-sxm").nvls->link_efficiency ==
        Approx(h200.profile.nvls->link_efficiency).epsilon(1e-5));
  CHECK(test::profile_preset("h200-sxm").nvls->step_latency_s ==
        Approx(h200.profile.nvls->step_latency_s).epsilon(1e-5));
  // NCCL ran a ring on 4 H200s with NVLS enabled, NVLS from 5.
  CHECK(h200.profile.nvls_min_ranks == 5);
  CHECK(test::profile_preset("h200-sxm").nvls_min_ranks == 5);
  // The 16 GiB all-gather / reduce-scatter rows share one size: they cannot fit the ring's latency.
  CHECK(test::profile_preset("h200-sxm").nccl.step_latency_s == Approx(fit.profile.nccl.step_latency_s).epsilon(1e-5));
  for (const calibrate::ComponentFit& c : h200.fits) {
    if (c.name == "nvls") CHECK(c.max_abs_error_pct < 15.0);  // the #3 target, in-sample and held out
    if (c.name == "nvls") CHECK(c.held_out_max_abs_error_pct < 15.0);
  }
  for (const char* gpu : {"h100-sxm", "h200-sxm", "h800-sxm"}) {
    INFO(gpu);
    const sim::CostProfile shipped = test::profile_preset(gpu);
    CHECK(shipped.gemm.efficiency == Approx(fit.profile.gemm.efficiency).epsilon(1e-5));
    REQUIRE(shipped.copy_engine_all_ranks_efficiency);
    CHECK(*shipped.copy_engine_all_ranks_efficiency ==
          Approx(*fit.profile.copy_engine_all_ranks_efficiency).epsilon(1e-5));
    CHECK(shipped.gemm.hbm_efficiency == Approx(fit.profile.gemm.hbm_efficiency).epsilon(1e-5));
    CHECK(shipped.gemm.overhead_s == Approx(fit.profile.gemm.overhead_s).epsilon(1e-5));
    CHECK(shipped.nccl.step_latency_s == Approx(fit.profile.nccl.step_latency_s).epsilon(1e-5));
    CHECK(shipped.nccl.link_efficiency == Approx(fit.profile.nccl.link_efficiency).epsilon(1e-5));
    CHECK(shipped.one_shot->step_latency_s == Approx(fit.profile.one_shot->step_latency_s).epsilon(1e-5));
    REQUIRE(shipped.nvls);
    if (std::string(gpu) != "h200-sxm") {
      CHECK(shipped.nvls->link_efficiency == Approx(fit.profile.nvls->link_efficiency).epsilon(1e-5));
    }
    CHECK(shipped.copy_engine.link_efficiency == Approx(380.0 / 450.0).epsilon(1e-5));
    REQUIRE(shipped.multimem);
    REQUIRE(shipped.multimem_gather);
    CHECK(shipped.multimem->link_efficiency == Approx(fit.profile.multimem->link_efficiency).epsilon(1e-5));
    CHECK(shipped.multimem_gather->step_latency_s == Approx(fit.profile.multimem_gather->step_latency_s).epsilon(1e-5));
    REQUIRE(shipped.network);
    CHECK(shipped.network->step_latency_s == Approx(fit.profile.network->step_latency_s).epsilon(1e-5));
    CHECK(shipped.network->link_efficiency == Approx(fit.profile.network->link_efficiency).epsilon(1e-5));
  }
  for (const calibrate::ComponentFit& c : fit.fits) {
    INFO(c.name);
    if (c.name == "multimem") CHECK(c.max_abs_error_pct < 16.0);         // vLLM's 4- and 6-GPU rows: 15%
    if (c.name == "multimem_gather") CHECK(c.max_abs_error_pct < 10.0);  // TokenWeave's gathers: 9.8%
    CHECK(c.errors.size() > 0);
    CHECK(c.max_abs_error_pct < 25.0);  // the worst, the NCCL ring fit at the protocol switch, is 22.6%
  }
}

TEST_CASE("a profile carried to the A100 scales its GEMM efficiency by the matmul fractions, without fp8 or NVLS") {
  const sim::GpuSpec h100 = test::gpu_preset("h100-sxm");
  const sim::GpuSpec a100 = test::gpu_preset("a100-sxm");
  calibrate::ProfileFit fit = calibrate::fit_profile(default_fit_set(), h100);
  REQUIRE(fit.profile.gemm.fp8_efficiency);
  REQUIRE(fit.profile.nvls);
  const sim::CostProfile fitted = fit.profile;
  calibrate::transfer_profile(fit, h100, a100);
  // gemm_mamf.csv: torch.mm reaches 86.9% of A100's bf16 peak and 80.3% of H100's.
  CHECK(fit.profile.gemm.efficiency == Approx(fitted.gemm.efficiency * 86.9 / 80.3));
  CHECK(fit.profile.gemm.hbm_efficiency == fitted.gemm.hbm_efficiency);
  CHECK_FALSE(fit.profile.gemm.fp8_efficiency);  // Ampere has no fp8 tensor cores
  CHECK_FALSE(fit.profile.nvls);                 // second-generation NVSwitch: no in-switch reduction
  CHECK(fit.profile.nccl.link_efficiency == fitted.nccl.link_efficiency);
  const std::string yaml = sim::profile_yaml(calibrate::profile_record(fit, "a100-sxm", {"h100.jsonl"}));
  CHECK_THAT(yaml, Contains("86.9 / 80.3") && Contains("FlashAttention-2") && Contains("no nvls section"));
  // The shipped a100 profile is this transfer of the default fit, and its large square GEMMs reach
  // the published max-achievable 271.2 TFLOP/s within 1% (efficiency x peak = 86.9% of 312).
  const sim::CostProfile shipped = test::profile_preset("a100-sxm");
  CHECK(shipped.gemm.efficiency == Approx(fit.profile.gemm.efficiency).epsilon(1e-5));
  CHECK_FALSE(shipped.nvls);
  const model::GemmShape square{8192, 8192, 8192};
  const sim::CostModel cost(a100, shipped);
  const double tflops = model::gemm_flops(square) / cost.gemm_seconds(square, model::gemm_bytes(square, 2)) / 1e12;
  CHECK(tflops == Approx(271.2).epsilon(0.01));
  // Carrying a profile to the GPU it was measured on changes nothing.
  calibrate::ProfileFit same = calibrate::fit_profile(default_fit_set(), h100);
  calibrate::transfer_profile(same, h100, h100);
  CHECK(same.profile.gemm.efficiency == fitted.gemm.efficiency);
  CHECK(same.gemm_source.empty());
}

TEST_CASE(
    "the limiter's window goes only to parts whose GPU preset gives a sustained ratio: the H100's fit carries it, the "
    "fit carried to the A100 and the B200 profile over the H100's base state none") {
  const sim::GpuSpec h100 = test::gpu_preset("h100-sxm");
  const sim::GpuSpec a100 = test::gpu_preset("a100-sxm");
  REQUIRE(h100.sustained_gemm_ratio > 0);
  REQUIRE(a100.sustained_gemm_ratio == 0);
  calibrate::ProfileFit fit = calibrate::fit_profile(default_fit_set(), h100);
  REQUIRE(fit.profile.power);
  CHECK(fit.profile.power->sustained_ratio == h100.sustained_gemm_ratio);
  calibrate::transfer_profile(fit, h100, a100);
  REQUIRE(fit.profile.power);
  CHECK(fit.profile.power->sustained_ratio == 0);
  const std::string yaml = sim::profile_yaml(calibrate::profile_record(fit, "a100-sxm", {"h100.jsonl"}));
  // Written at 0, so that a profile naming a base with a ratio does not take the base's.
  CHECK_THAT(yaml,
             Contains("sustained_ratio: 0\n") && Contains("none: a100-sxm's preset gives no sustained_gemm_ratio"));
  CHECK(test::profile_preset("h100-sxm").power->sustained_ratio == h100.sustained_gemm_ratio);
  CHECK(test::profile_preset("b200").power->sustained_ratio == 0);
}

TEST_CASE("a profile fitted on GEMMs alone marks every other section not fitted, with one source each") {
  const auto gemms = calibrate::read_measurements(test::kMeasurements + "gemm_h100_bf16.jsonl");
  const calibrate::ProfileFit fit = calibrate::fit_profile(gemms, test::gpu_preset("h100-sxm"));
  const std::string yaml = sim::profile_yaml(calibrate::profile_record(fit, "h100-sxm", {"gemm.jsonl"}));
  // Each top-level section's lines, split at the next unindented key.
  size_t start = 0;
  int sections = 0;
  while (start < yaml.size()) {
    size_t end = start;
    do {
      end = yaml.find('\n', end);
      end = end == std::string::npos ? yaml.size() : end + 1;
    } while (end < yaml.size() && (yaml[end] == ' ' || yaml[end] == '#'));
    const std::string section = yaml.substr(start, end - start);
    INFO(section);
    size_t sources = 0;
    for (size_t at = section.find("\n  source:"); at != std::string::npos; at = section.find("\n  source:", at + 1)) {
      ++sources;
    }
    CHECK(sources <= 1);
    ++sections;
    start = end;
  }
  CHECK(sections > 7);
  CHECK_THAT(yaml, Contains("fit: \"not fitted: no measurements\""));
  CHECK(sim::parse_profile(yaml, "p.yaml").gemm.efficiency == Approx(fit.profile.gemm.efficiency).epsilon(1e-5));
}

TEST_CASE("the shipped measurement files are the conversion of the public tables") {
  const auto converted = calibrate::convert_public_tables(std::string(TPSIM_SOURCE_DIR) + "/calibrate/data/public");
  for (const auto& [name, measurements] : converted) {
    INFO(name);
    const auto shipped = calibrate::read_measurements(test::kMeasurements + name);
    REQUIRE(shipped.size() == measurements.size());
    for (size_t i = 0; i < shipped.size(); ++i) CHECK(shipped[i].median_s == Approx(measurements[i].median_s));
  }
  const auto gemm = calibrate::read_measurements(test::kMeasurements + "gemm_h100_bf16.jsonl");
  CHECK(gemm.front().tflops() == Approx(176.62));  // 1024^3 at 176.62 TFLOP/s in the source table
  // NCCL all-reduces of the TokenWeave rows: ring up to 1 MiB, NVLS from 2 MiB (the H200 sweep's
  // statement of what NCCL runs on 8 NVSwitch Hopper GPUs), each saying it was inferred.
  for (const calibrate::Measurement& m :
       calibrate::read_measurements(test::kMeasurements + "collectives_h100_latency.jsonl")) {
    if (m.collective != "allreduce" || m.provenance.value("tool", "") != "nccl") continue;
    INFO(m.origin);
    CHECK(m.algorithm == (m.bytes <= 1024.0 * 1024 ? "ring" : "nvls"));
    CHECK(m.provenance.value("algorithm", "").rfind("inferred: ", 0) == 0);
  }
}

TEST_CASE("a bad measurement line is rejected with its file, line and field") {
  const std::string path = "tpsim_bad_measurements.jsonl";
  const auto write = [&](const std::string& text) { std::ofstream(path) << text; };
  const std::string good = R"({"kind":"gemm","gpu":"h100-sxm","m":64,"n":64,"k":64,"median_s":1e-5})";
  write(good + "\n" + R"({"kind":"gemm","gpu":"h100-sxm","m":64,"n":64,"median_s":1e-5})" + "\n");
  CHECK_THROWS_WITH(calibrate::read_measurements(path), Contains(path + ":2: missing field \"k\""));
  write(R"({"kind":"collective","gpu":"h100-sxm","collective":"allreduce","ranks":8,"bytes":1024,"median_s":-1})");
  CHECK_THROWS_WITH(calibrate::read_measurements(path), Contains(path + ":1: \"median_s\" must be a positive number"));
  write(R"({"kind":"collective","gpu":"h100-sxm","collective":"broadcast","ranks":8,"bytes":1024,"median_s":1})");
  CHECK_THROWS_WITH(
      calibrate::read_measurements(path),
      Contains("must be one of allreduce, allgather, reducescatter, alltoall, sendrecv, got \"broadcast\""));
  write(R"({"kind":"fft","gpu":"h100-sxm","median_s":1})");
  CHECK_THROWS_WITH(calibrate::read_measurements(path),
                    Contains("unknown \"kind\" \"fft\"; valid: gemm, collective, memcpy"));
  write(
      R"({"kind":"collective","gpu":"b200","collective":"allreduce","ranks":12,"nodes":8,"bytes":1024,"median_s":1})");
  CHECK_THROWS_WITH(calibrate::read_measurements(path),
                    Contains(path + ":1: \"nodes\" must divide \"ranks\"") && Contains("got 8 nodes for 12 ranks"));
  write(R"({"kind":"collective","gpu":"h100-sxm","collective":"allgather","ranks":8,"protocol":"LL","bytes":1024,)"
        R"("median_s":1})");
  CHECK_THROWS_WITH(calibrate::read_measurements(path),
                    Contains(path + ":1: \"protocol\" must be one of simple, ll, ll128, unknown, got \"LL\""));
  write("not json\n");
  CHECK_THROWS_WITH(calibrate::read_measurements(path), Contains(path + ":1: not a JSON object"));
  write(R"({"kind":"gemm","gpu":"h100-sxm","m":64,"n":64,"k":64,"median_s":2e-5,"p10_s":3e-5})");
  CHECK_THROWS_WITH(calibrate::read_measurements(path), Contains("p10_s <= median_s <= p90_s"));
  write("\n");
  CHECK_THROWS_WITH(calibrate::read_measurements(path), Contains("no measurements"));
  std::remove(path.c_str());
}

TEST_CASE("a malformed CSV table is rejected with its file and line") {
  CHECK_THROWS_WITH(calibrate::CsvTable::parse("m,n\n1,2\n3\n", "t.csv"), Contains("t.csv:3") && Contains("1 fields"));
  const calibrate::CsvTable table = calibrate::CsvTable::parse("m,note\n\"1\",\"a, b\"\nx,y\n", "t.csv");
  CHECK(table.at(0, "note") == "a, b");
  CHECK(table.number(0, "m") == 1.0);
  CHECK_THROWS_WITH(table.number(1, "m"), Contains("t.csv:3") && Contains("not a number"));
}

TEST_CASE("the shipped b200 profile is its GEMM fit over the H100 profile, which it names") {
  auto gemms = calibrate::read_measurements(test::kMeasurements + "gemm_b200_bf16.jsonl");
  const auto on_off = calibrate::read_measurements(test::kMeasurements + "nvls_vs_ring_b200.jsonl");
  gemms.insert(gemms.end(), on_off.begin(), on_off.end());
  const sim::CostProfile h100 = test::profile_preset("h100-sxm");
  const calibrate::ProfileFit fit = calibrate::fit_profile(gemms, test::gpu_preset("b200"), &h100, "h100");
  const sim::CostProfile shipped = test::profile_preset("b200");
  CHECK(shipped.gemm.efficiency == Approx(fit.profile.gemm.efficiency).epsilon(1e-5));
  CHECK(shipped.gemm.hbm_efficiency == Approx(fit.profile.gemm.hbm_efficiency).epsilon(1e-5));
  CHECK(shipped.gemm.overhead_s == Approx(fit.profile.gemm.overhead_s).epsilon(1e-5));
  // Everything the B200 GEMMs cannot fit is the H100 profile's.
  CHECK(shipped.nccl.step_latency_s == Approx(h100.nccl.step_latency_s).epsilon(1e-5));
  CHECK(shipped.one_shot->link_efficiency == Approx(h100.one_shot->link_efficiency).epsilon(1e-5));
  REQUIRE(shipped.two_shot);
  REQUIRE(shipped.nvls);
  CHECK(shipped.nvls->link_efficiency == Approx(h100.nvls->link_efficiency).epsilon(1e-5));
  // NCCL ran rings on 4 and 5 B200s with NVLS enabled; the ramp's one size fits no NVLS latency.
  CHECK(fit.profile.nvls_min_ranks == 6);
  CHECK(shipped.nvls_min_ranks == 6);
  CHECK(fit.not_fitted.size() >= 2);  // nccl, copy_engine
  const std::string yaml = sim::profile_yaml(calibrate::profile_record(fit, "b200", {"gemm_b200_bf16.jsonl"}));
  CHECK(yaml.find("fit: \"not fitted here: as in h100\"") != std::string::npos);
}

TEST_CASE("a measurement line that gives a key twice is refused, naming its line and the key") {
  const std::string line =
      R"({"kind":"gemm","gpu":"h100-sxm","m":4096,"n":4096,"k":4096,"dtype":"bf16","median_s":1e-4,"median_s":2e-4})";
  CHECK_THROWS_WITH(calibrate::parse_measurement(line, "m.jsonl:7"),
                    Contains("m.jsonl:7: key \"median_s\" is given twice in one JSON object"));
}

TEST_CASE(
    "attention rates carried to another GPU say so: not fitted here on SM90, assumed elsewhere, as the copy "
    "engine's all-ranks rate does") {
  const sim::CostProfile h100 = test::profile_preset("h100-sxm");
  const auto b200_gemms = calibrate::read_measurements(test::kMeasurements + "gemm_b200_bf16.jsonl");
  const calibrate::ProfileFit b200 = calibrate::fit_profile(b200_gemms, test::gpu_preset("b200"), &h100, "h100.yaml");
  CHECK_THAT(b200.attention_source,
             StartsWith("assumed: the h100-sxm value, carried to b200") && Contains("FlashAttention-3"));
  CHECK_THAT(b200.attention_backward_source, StartsWith("assumed: ") && Contains("(as in h100.yaml)"));
  for (const auto& [name, source] : b200.attention_kernel_sources) {
    INFO(name);
    CHECK_THAT(source, StartsWith("assumed: "));
  }
  // So does the copy engine's rate while every rank pulls, fitted on an H100 trace.
  CHECK_THAT(b200.all_ranks_source, StartsWith("assumed: the h100-sxm value, carried to b200"));
  // The same kernels on another Hopper part: carried, not fitted there.
  calibrate::ProfileFit h800 = calibrate::fit_profile(default_fit_set(), test::gpu_preset("h100-sxm"));
  calibrate::transfer_profile(h800, test::gpu_preset("h100-sxm"), test::gpu_preset("h800-sxm"));
  CHECK_THAT(h800.attention_source, StartsWith("not fitted here: the h100-sxm value, carried to h800-sxm (the same"));
  // The A100 runs FlashAttention-2: its forward is that paper's; its backward stays the H100's, assumed.
  calibrate::ProfileFit a100 = calibrate::fit_profile(default_fit_set(), test::gpu_preset("h100-sxm"));
  calibrate::transfer_profile(a100, test::gpu_preset("h100-sxm"), test::gpu_preset("a100-sxm"));
  CHECK_THAT(a100.attention_source, Contains("FlashAttention-2 (Dao 2023)"));
  CHECK_THAT(a100.attention_backward_source, StartsWith("assumed: the h100-sxm value, carried to a100-sxm"));
}
