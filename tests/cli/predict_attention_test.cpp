// `tpsim predict attention`: one kernel's forward and backward from the profile's rates, against the public
// benchmarks those rates come from, and its refusals.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"
#include "test_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

nlohmann::json predict(const std::string& args) {
  const test::CommandResult r = test::run_tpsim("predict attention --json " + args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

// The FlashAttention-3 paper's harness (Fig. 5): 16k tokens in all, 16 heads of dimension 128.
std::string paper_shape(int seq) {
  return "--seq " + std::to_string(seq) + " --batch " + std::to_string(16384 / seq) + " --heads 16 --head-dim 128";
}

}  // namespace

TEST_CASE("tpsim predict attention gives the FlashAttention-3 paper's causal forward bars within 4% on H100") {
  // Fig. 5d, TFLOP/s at 512 to 16k tokens (calibrate/fits/causal_mask_fit.cpp holds the fitted copy).
  const std::vector<std::pair<std::string, std::vector<double>>> published = {
      {"fa3", {292, 423, 521, 579, 602, 616}},
      {"fa2", {191, 260, 298, 319, 333, 335}},
      {"cudnn", {315, 410, 484, 518, 529, 539}}};
  for (const auto& [kernel, rates] : published) {
    for (size_t i = 0; i < rates.size(); ++i) {
      const int seq = 512 << i;
      INFO(kernel << " at " << seq);
      const nlohmann::json j = predict(paper_shape(seq) + " --kernel " + kernel);
      CHECK(j["kernel"] == kernel);
      // 4%: the fit's largest error over the six bars (3.3%), its 1 + D / L form not exact at every length; the
      // launch overhead adds under 1% at 512 tokens.
      CHECK(j["forward"]["tflops"].get<double>() == Approx(rates[i]).epsilon(0.04));
    }
  }
}

TEST_CASE("tpsim predict attention without a mask runs at the paper's unmasked rate at 8k and 16k tokens") {
  // Fig. 5c: FlashAttention-3 646 and 648 TFLOP/s, FlashAttention-2 370 and 370; the profile holds their mean.
  for (const int seq : {8192, 16384}) {
    CHECK(predict(paper_shape(seq) + " --mask none")["forward"]["tflops"].get<double>() == Approx(647).epsilon(0.005));
    CHECK(predict(paper_shape(seq) + " --mask none --kernel fa2")["forward"]["tflops"].get<double>() ==
          Approx(370).epsilon(0.005));
  }
}

TEST_CASE("tpsim predict attention's causal backward over its unmasked one follows 1 + D / L") {
  const sim::CostProfile profile = test::profile_preset("h100-sxm");
  for (const int seq : {4096, 16384}) {
    const double causal = predict(paper_shape(seq))["backward"]["time_s"].get<double>();
    const double unmasked = predict(paper_shape(seq) + " --mask none")["backward"]["time_s"].get<double>();
    // The unmasked block has twice the causal one's FLOPs, at the rate without the mask.
    CHECK(causal / unmasked ==
          Approx((1.0 + profile.attention.backward_causal_tokens / seq) / 2.0).epsilon(0.01));  // 1%: launch overhead
  }
}

TEST_CASE("tpsim predict attention of one decode token over a long cache is bound by reading it") {
  const sim::CostProfile profile = test::profile_preset("h100-sxm");
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const nlohmann::json j = predict("--seq 1 --kv-seq 32768 --batch 8 --heads 64 --kv-heads 8 --head-dim 128");
  CHECK(j["forward"]["memory_bound"] == true);
  // K and V of 8 heads over 32,768 keys in bf16 per sequence, the query and output a rounding error beside them.
  const double cache = 2.0 * 8 * 32768 * 8 * 128 * 2;
  const double query_and_output = 2.0 * 8 * 64 * 128 * 2;
  CHECK(j["forward"]["time_s"].get<double>() ==
        Approx(profile.gemm.overhead_s + (cache + query_and_output) / (gpu.hbm_Bps * profile.memory.hbm_efficiency))
            .epsilon(1e-9));
}

TEST_CASE("tpsim predict attention refuses a shape, mask, kernel or dtype it cannot cost, in one line") {
  const auto refused = [](const std::string& args, const std::string& why) {
    const test::CommandResult r = test::run_tpsim("predict attention " + args);
    INFO(args << " -> " << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains(why));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  };
  refused("--seq 0", "must be positive integers");
  refused("--seq 4096 --heads 12 --kv-heads 5", "--heads 12 is not a multiple of --kv-heads 5");
  refused("--seq 4096 --kv-seq 1024", "causal queries are the last of the keys");
  refused("--seq 4096 --mask sliding", "--mask sliding: valid: causal, none");
  refused("--seq 4096 --dtype fp16", "--dtype fp16: valid: bf16, fp8");
  refused("--seq 4096 --kernel flex", "--kernel flex: profile");
  refused("--seq 4096 --gpu a100-sxm --dtype fp8", "--dtype fp8:");
  refused("--seq 4294967296 --batch 4294967296", "over the largest size tpsim simulates");
}
