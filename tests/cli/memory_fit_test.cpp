// What a user is told about memory: the whole model's per GPU whatever `workload.layers` simulates (the two cases
// a slice once let through are refused by --require-fit), its parts under --memory, and what one training step
// holds over the replicas.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_support.hpp"

namespace fs = std::filesystem;
using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

std::string write_scenario(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("tpsim_memory_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / (name + ".yaml")).string();
  std::ofstream(path) << text;
  return path;
}

nlohmann::json run_json(const std::string& path) {
  const test::CommandResult r = test::run_tpsim("run " + path + " -q --json -");
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("Llama-3.1-70B training at TP 1 simulated on 2 layers is refused by --require-fit at the whole model's size",
          "[cli][memory]") {
  const std::string path = write_scenario(
      "t70",
      "name: t70\nmodel: llama-3.1-70b\nhardware: {gpu: h100-sxm}\nworkload: {phase: train, batch: 1, seq_len: "
      "4096, layers: 2}\nparallelism: {tp: 1}\nvariants: [{name: tp, tp_mode: tp}]\n");
  const nlohmann::json j = run_json(path);
  // Llama-3.1-70B's parameters: 80 layers of q, k, v, o, gate, up, down and two norms; embedding, head, final norm.
  const double h = 8192, f = 28672, hd = 128, heads = 64, kv = 8, vocab = 128256;
  const double params = 80 * (h * (heads + 2 * kv) * hd + heads * hd * h + 3 * h * f + 2 * h) + 2 * vocab * h + h;
  const nlohmann::json& m = j["results"][0]["memory"];
  CHECK(j["scenario"]["workload"]["layers"] == 2);
  CHECK(j["scenario"]["workload"]["memory_layers"] == 80);
  CHECK(m["weights_bytes"].get<double>() == Approx(2 * params));
  CHECK(m["gradient_bytes"].get<double>() == Approx(4 * params));
  CHECK(m["optimizer_bytes"].get<double>() == Approx(12 * params));
  CHECK(j["results"][0]["fits_memory"] == false);
  const test::CommandResult refused = test::run_tpsim("run " + path + " --require-fit");
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Contains("--require-fit: variant tp needs") && Contains("GiB per GPU for all 80 layers") &&
                              Contains("above the 79.11 GiB h100-sxm gives"));
  const test::CommandResult table = test::run_tpsim("run " + path);
  CHECK_THAT(table.out,
             Contains("2 of 80 layers simulated") && Contains("mem GiB: per GPU, all 80 layers (2 simulated)"));
}

TEST_CASE("Llama-3.1-405B decoding at TP 8 from a 128K context, simulated on 2 layers, holds every layer's KV cache",
          "[cli][memory]") {
  const std::string path = write_scenario(
      "d405",
      "name: d405\nmodel: llama-3.1-405b\nhardware: {gpu: h100-sxm}\nworkload: {phase: decode, batch: 64, "
      "context_len: 131072, layers: 2}\nparallelism: {tp: 8}\nvariants: [{name: tp, tp_mode: tp}]\n");
  const nlohmann::json j = run_json(path);
  // K and V of 126 layers, one of 8 KV heads of 128 per GPU, 64 sequences of the context and the new token, bf16.
  const double kv_cache = 126 * 2 * (8 / 8) * 128 * 64 * (131072.0 + 1) * 2;
  const nlohmann::json& m = j["results"][0]["memory"];
  CHECK(m["kv_cache_bytes"].get<double>() == Approx(kv_cache));
  CHECK(j["results"][0]["memory_per_gpu_bytes"].get<double>() > kv_cache);
  const test::CommandResult refused = test::run_tpsim("run " + path + " --require-fit");
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Contains("for all 126 layers") && Contains("above the 79.11 GiB h100-sxm gives"));
}

TEST_CASE("tpsim run --memory prints each part per GPU, a row per stage under a pipeline, the JSON summing them alike",
          "[cli][memory]") {
  const test::CommandResult r = test::run_tpsim("run scenarios/pipeline/llama3-70b-tp8-pp4-train.yaml --memory");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("memory per GPU in GiB, all 80 layers, against h100-sxm's usable 79.11 GiB") &&
                        Contains("=tensors") && Contains("=reserved") && Contains("=device") &&
                        Contains("sp stage 0") && Contains("sp stage 3") && Contains("runtime parts: "));
  const nlohmann::json j = run_json("scenarios/pipeline/llama3-70b-tp8-pp4-train.yaml");
  for (const nlohmann::json& stage : j["results"][0]["pipeline"]["per_stage"]) {
    const nlohmann::json& m = stage["memory"];
    CHECK(m["peak_reserved"].get<double>() ==
          Approx(m["tensor_bytes"].get<double>() + m["workspace_bytes"].get<double>() +
                 m["allocator_reserve_bytes"].get<double>()));
    CHECK(m["device_bytes"].get<double>() ==
          Approx(m["peak_reserved"].get<double>() + m["context_bytes"].get<double>() + m["nccl_bytes"].get<double>()));
    CHECK(stage["memory_per_gpu_bytes"] == m["device_bytes"]);
  }
}

TEST_CASE("the table says what one training step holds over the replicas, micro-batches counted per replica",
          "[cli][memory]") {
  // 128 sequences per step over 8 replicas of micro-batches of 2: 8 micro-batches each.
  const std::string path =
      write_scenario("step",
                     "name: step\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nworkload: {phase: train, batch: 2, "
                     "seq_len: 8192, layers: 1, global_batch: 128}\nparallelism: {tp: 1, dp: 8}\n"
                     "variants: [{name: tp, tp_mode: tp}]\n");
  const test::CommandResult r = test::run_tpsim("run " + path);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("x 8 micro-batches per replica (one step: 128 sequences x 8192 tokens = 1.05M tokens)"));
  const nlohmann::json j = run_json(path);
  CHECK(j["scenario"]["workload"]["global_batch"] == 128);
  CHECK(j["scenario"]["workload"]["microbatches"] == 8);
  CHECK(j["scenario"]["workload"]["sequences_per_step"] == 128);
}
