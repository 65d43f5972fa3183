// Profiler traces through the commands: calibrate on a public multi-rank Kineto trace writes a profile whose
// per-kernel errors on that trace are in it (and in calibrate report), validate --trace compares a traced step
// by kernel class and module, and bad traces are refused in one line with exit 2 and nothing written.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/cli_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

const std::string kPublic = "tests/data/kineto/hta_nccl_data_rank0.json.gz";
const std::string kH200 = "real/results/h200-2026-12-04/torch/trace_llama8b_2layers.json.gz";

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tpsim_trace_cmd_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("calibrate on a public multi-rank Kineto trace writes a profile listing its error on each traced size") {
  const std::string out = temp_path("profile.yaml");
  const test::CommandResult r = test::run_tpsim("calibrate " + kPublic + " --measured-on a100-sxm-40gb -o " + out);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Contains("GPU time by kernel class") && Contains("not fitted: 6 NCCL broadcast calls"));
  const std::string profile = test::read_file(out);
  // The five all-reduce sizes (NCCL ring LL kernels): each named by the trace, its kernel and event, with its error.
  CHECK(count(profile, "hta_nccl_data_rank0.json.gz: allreduce of ") >= 5);
  CHECK_THAT(profile, Contains("ncclKernel_AllReduce_RING_LL_Sum_float (first traceEvents["));
  CHECK_THAT(profile, Contains("fitted on ring points run with NCCL_PROTO=LL"));
  std::filesystem::remove(out);
  const test::CommandResult report = test::run_tpsim("calibrate report " + kPublic + " --measured-on a100-sxm-40gb");
  REQUIRE(report.exit_code == 0);
  // Each traced size is a row of the report, named by the trace and its kernels, predicted by the in-sample fit
  // (the profile calibrate writes) with its error, even where the held-out fit (on three of the sizes) fails.
  CHECK(count(report.out, "hta_nccl_data_rank0.json.gz: allreduce of ") >= 5);
  CHECK(count(report.out, "| not predicted: ") == 0);
  CHECK_THAT(report.out, Contains("In-sample: mean |error|"));
}

TEST_CASE("validate --trace compares our H200 step by kernel class and module against its scenario") {
  const test::CommandResult r =
      test::run_tpsim("validate --trace " + kH200 + " --scenario scenarios/traces/h200-llama3-8b-2layers-train.yaml");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("(2 steps)") && Contains("by kernel class") && Contains("by module"));
  for (const char* row : {"gemm ", "attention ", "memory-bound ", "optimizer ", "ffn ", "unattributed ", "step time"}) {
    CHECK_THAT(r.out, Contains(row));
  }
}

TEST_CASE("validate --trace with two traces prints the measured and predicted speedup of the second variant") {
  // The same trace twice against a scenario of two identical variants: measured and predicted speedups are 1.
  const std::string scenario = temp_path("two.yaml");
  std::ifstream in(std::string(TPSIM_SOURCE_DIR) + "/scenarios/traces/h200-llama3-8b-2layers-train.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.replace(text.find("  - {name: eager, tp_mode: nocomm}"), 34,
               "  - {name: eager, tp_mode: nocomm}\n  - {name: again, tp_mode: nocomm}");
  std::ofstream(scenario) << text;
  const test::CommandResult r =
      test::run_tpsim("validate --trace " + kH200 + " --trace " + kH200 + " --scenario " + scenario);
  std::filesystem::remove(scenario);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("speedup of again over eager: measured 1.000x, predicted 1.000x, error +0.0%"));
}

TEST_CASE("bad traces and trace sections are refused in one line with exit 2") {
  const std::string bad = temp_path("bad.json");
  const auto refused = [&](const std::string& text, const std::string& args, const std::string& expected) {
    std::ofstream(bad, std::ios::binary) << text;
    const test::CommandResult r = test::run_tpsim(args);
    CHECK(r.exit_code == 2);
    // One line; a trace that fits nothing has its analysis (what it held, why nothing fits) before that line.
    const size_t last = r.err.rfind('\n', r.err.size() - 2);
    const std::string line = last == std::string::npos ? r.err : r.err.substr(last + 1);
    CHECK((count(r.err, "\n") == 1 || line.find("holds no kernel") != std::string::npos));
    CHECK_THAT(line, Contains(expected) && Contains("tpsim: error: "));
  };
  const std::string out = temp_path("never.yaml");
  refused("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1}]}",
          "calibrate " + bad + " --measured-on h100-sxm -o " + out, "traceEvents[0] (k): no 'dur'");
  CHECK_FALSE(std::filesystem::exists(out));
  refused(std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00", 8), "calibrate " + bad + " --measured-on h100-sxm -o " + out,
          "the gzip stream ends early");
  refused("{\"traceEvents\": []}", "calibrate " + bad + " -o " + out, "the trace names no device");
  refused("{\"traceEvents\": []}", "calibrate " + bad + " --measured-on h100-sxm -o " + out,
          "the trace holds no kernel tpsim can fit");
  refused("{\"traceEvents\": []}", "validate --trace " + bad, "validate --trace needs --scenario");
  const std::string scenario = temp_path("s.yaml");
  std::ifstream in(std::string(TPSIM_SOURCE_DIR) + "/scenarios/traces/h200-llama3-8b-2layers-train.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.replace(text.find("trace: {steps: 2}"), 17, "trace: {steps: 2, modules: [{match: rms, module: mlp}]}");
  std::ofstream(scenario) << text;
  refused("{\"traceEvents\": []}", "validate --trace " + bad + " --scenario " + scenario, "trace.modules module");
  std::filesystem::remove(bad);
  std::filesystem::remove(scenario);
}

TEST_CASE("validate --trace on the public trace compares its NCCL kernels with its scenario's all-reduces") {
  const test::CommandResult r =
      test::run_tpsim("validate --trace " + kPublic + " --scenario scenarios/traces/hta-a100-allreduce-2ranks.yaml");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("(3 steps)") && Contains("variant ddp"));
  // Measured NCCL time per step includes the broadcasts and each kernel's wait for the other rank; the predicted
  // time is the five all-reduces alone: both are printed, the error is what it is.
  CHECK_THAT(r.out, Contains("nccl ") && Contains("gemm ") && Contains("(none predicted)"));
}

TEST_CASE("validate --trace predicts our H200 step's memory-bound kernels at most 38% short of measured") {
  // The scenario names the eager kernels the traced code launches (autocast's weight casts, eager RMSNorm and
  // SwiGLU, the fp32 loss), costed at the profile's memory regime. Not modelled, and short by about 10.4 of the
  // 32.5 ms measured (32%): the bf16-to-fp32 casts running at about 2.0 TB/s (PyTorch's non-vectorised casting
  // copy) where the regime gives 4.3 (3.1 ms); the fp32 residual stream's activation casts and gradient sums under
  // autocast (2.9 ms); the probe's bf16 RoPE and its backward's slice copies (1.9 ms); broadcasting products in the
  // norms at 2.6 TB/s (1.2 ms); the fp32 embedding's sorted backward (1.0 ms). Above the measured would mean a
  // kernel counted twice.
  const test::CommandResult r =
      test::run_tpsim("validate --trace " + kH200 + " --scenario scenarios/traces/h200-llama3-8b-2layers-train.yaml");
  REQUIRE(r.exit_code == 0);
  const size_t row = r.out.find("memory-bound ");
  REQUIRE(row != std::string::npos);
  std::istringstream fields(r.out.substr(row + 13));
  double measured = 0, predicted = 0;
  fields >> measured >> predicted;
  CHECK(predicted >= 0.62 * measured);
  CHECK(predicted <= measured);
}

TEST_CASE("validate --trace on the published TorchTitan layer's rows prints each row and the speedup in one command") {
  const std::string rows = "calibrate/data/public/async_tp_trace_layer.csv";
  const test::CommandResult r = test::run_tpsim(
      "validate --trace " + rows + " --scenario scenarios/published/torchtitan-llama3-70b-traced-layer.yaml");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("traced rows " + rows + " against torchtitan-llama3-70b-traced-layer variant sp:") &&
                        Contains("variant async:"));
  CHECK_THAT(r.out, Contains("NCCL all-gather (attention input)") && Contains("fused w2 matmul + reduce-scatter"));
  // Every kernel and block row has the ops the scenario names for it: none is left unpredicted.
  CHECK(count(r.out, "(no ops named)") == 0);
  // The published whole spans, 82.56 and 63.77 ms: a measured speedup of 1.295.
  CHECK_THAT(r.out, Contains("step (the traced span; predicted: the variant's time): measured 82.56 ms"));
  CHECK_THAT(r.out, Contains("speedup of async over sp: measured 1.295x, predicted "));
}

TEST_CASE("traced rows naming a variant the scenario lacks or ops it never ran are refused in one line") {
  const std::string bad = temp_path("rows.csv");
  const std::string scenario = "scenarios/published/torchtitan-llama3-70b-traced-layer.yaml";
  std::ofstream(bad) << "variant,order,kernel_or_block,duration_ms,kind,notes\nfsdp,1,x,1.0,gemm,\n";
  test::CommandResult r = test::run_tpsim("validate --trace " + bad + " --scenario " + scenario);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("variant 'fsdp' is not a variant of"));
  const std::string s = temp_path("s.yaml");
  std::ifstream in(std::string(TPSIM_SOURCE_DIR) + "/" + scenario);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.replace(text.find("ops: [attn.core]}"), 17, "ops: [attn.kore]}");
  std::ofstream(s) << text;
  r = test::run_tpsim("validate --trace calibrate/data/public/async_tp_trace_layer.csv --scenario " + s);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("sp row 5: variant sp ran no op named 'attn.kore' on GPU 0"));
  text.replace(text.find("{variant: sp, order: 1,"), 23, "{variant: zz, order: 1,");
  std::ofstream(s) << text;
  r = test::run_tpsim("validate --trace calibrate/data/public/async_tp_trace_layer.csv --scenario " + s);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("trace.rows variant"));
  std::filesystem::remove(bad);
  std::filesystem::remove(s);
}
