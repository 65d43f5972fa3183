// Memory per GPU is the whole model's, whatever `workload.layers` simulates (per stage under a pipeline), with
// what the allocator and the runtime hold beside the tensors, set against the HBM the GPU gives.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "input/gpu_reader.hpp"
#include "input/presets.hpp"
#include "model/scenario.hpp"
#include "sim/cost/runtime_memory.hpp"
#include "sim/run/scenario_run.hpp"
#include "test_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

sim::ScenarioRun run(const std::string& text) {
  return sim::run_scenario(model::parse_scenario(text, "m.yaml"));
}

// `text` with its "LAYERS" replaced.
std::string with_layers(std::string text, const std::string& layers) {
  return text.replace(text.find("LAYERS"), 6, layers);
}

// Every part of two footprints the same (the runtime's parts included).
void check_same(const model::MemoryFootprint& a, const model::MemoryFootprint& b) {
  CHECK(a.weights_bytes == b.weights_bytes);
  CHECK(a.kv_cache_bytes == b.kv_cache_bytes);
  CHECK(a.activation_bytes == b.activation_bytes);
  CHECK(a.buffer_bytes == b.buffer_bytes);
  CHECK(a.gradient_bytes == b.gradient_bytes);
  CHECK(a.optimizer_bytes == b.optimizer_bytes);
  CHECK(a.allocator_reserve_bytes == b.allocator_reserve_bytes);
  CHECK(a.nccl_bytes == b.nccl_bytes);
  CHECK(a.device_bytes() == b.device_bytes());
}

}  // namespace

TEST_CASE("the layers a run simulates never change its memory: a training step, a decode and a pipeline's stages",
          "[sim][memory]") {
  const std::string train =
      "model: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nworkload: {phase: train, batch: 1, seq_len: 2048, layers: "
      "LAYERS}\nparallelism: {tp: 8}\nvariants: [{name: sp, tp_mode: sp}, {name: dtp, tp_mode: dtp, delta: 1}]\n";
  const std::string decode =
      "model: llama-3.1-70b\nhardware: {gpu: h100-sxm}\nworkload: {phase: decode, batch: 16, context_len: 4096, "
      "layers: LAYERS}\nparallelism: {tp: 8}\nvariants: [{name: tp, tp_mode: tp}]\n";
  const std::string pipeline =
      "model: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nworkload: {phase: train, batch: 1, seq_len: 2048, "
      "microbatches: 8, layers: LAYERS}\nparallelism: {tp: 1, pp: 4, dp: 2}\nfsdp: {}\n"
      "variants: [{name: sp, tp_mode: sp}]\n";
  for (const std::string& text : {train, decode, pipeline}) {
    const sim::ScenarioRun whole = run(with_layers(text, "all"));
    for (const char* slice : {"4", "8"}) {
      const sim::ScenarioRun part = run(with_layers(text, slice));
      REQUIRE(part.scenario.workload.layers < whole.scenario.workload.layers);
      for (size_t v = 0; v < whole.variants.size(); ++v) {
        check_same(*part.variants[v].memory, *whole.variants[v].memory);
        if (!whole.variants[v].pipeline) continue;
        for (size_t i = 0; i < whole.variants[v].pipeline->stages.size(); ++i) {
          check_same(part.variants[v].pipeline->stages[i].memory, whole.variants[v].pipeline->stages[i].memory);
        }
      }
    }
  }
}

TEST_CASE("a slice's pipeline counts the whole model's layers over its stages, the extra ones from the second chunk",
          "[sim][memory]") {
  // Llama-3.1-8B's 32 layers over the 5 stages of a 5-layer slice: 6, 7, 7, 6, 6 layers of the whole model.
  const sim::ScenarioRun r =
      run("model: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nworkload: {phase: train, batch: 1, seq_len: 2048, "
          "microbatches: 5, layers: 5}\nparallelism: {tp: 1, pp: 5}\nvariants: [{name: tp, tp_mode: tp}]\n");
  const auto& stages = r.variants.front().pipeline->stages;
  const model::ArchSpec& a = r.scenario.arch;
  // The middle stages hold only layers: those with 7 and 6 layers differ by one layer's optimizer state.
  const double layer_state = stages[1].memory.optimizer_bytes - stages[3].memory.optimizer_bytes;
  const double hd = static_cast<double>(a.head_dim), h = static_cast<double>(a.hidden);
  const double layer_parameters =
      h * (a.heads + 2.0 * a.kv_heads) * hd + a.heads * hd * h + 3.0 * h * static_cast<double>(a.intermediate) + 2 * h;
  CHECK(layer_state == Approx(12 * layer_parameters));
  CHECK(stages[2].memory.optimizer_bytes == stages[1].memory.optimizer_bytes);
}

TEST_CASE(
    "the runtime's parts: cuBLAS workspaces and the allocator's reserve in the peak reserved, the context and "
    "NCCL's buffers beside it",
    "[sim][memory]") {
  const sim::GpuSpec h100 = test::gpu_preset("h100-sxm");
  const sim::RuntimeMemorySpec& spec = h100.runtime_memory;
  REQUIRE(spec.given);
  model::MemoryFootprint m;
  m.weights_bytes = 10e9;
  m.activation_bytes = 20e9;
  m.kv_cache_bytes = 30e9;
  sim::add_runtime_memory(m, spec, sim::Communicators{3, 2});
  CHECK(m.allocator_reserve_bytes == Approx(spec.allocator_reserve * 30e9));  // the KV cache excepted
  CHECK(m.peak_reserved_bytes() == Approx(60e9 + spec.workspace_bytes + spec.allocator_reserve * 30e9));
  CHECK(m.nccl_bytes == Approx(3 * spec.nccl_communicator_bytes + 2 * spec.nccl_peer_bytes));
  CHECK(m.device_bytes() == Approx(m.peak_reserved_bytes() + spec.context_bytes + m.nccl_bytes));
  // Each mesh dimension with collectives has its communicator; stages send to their neighbours; NCCL's
  // all-to-all reaches every other member of the expert group.
  const auto comms = [](const std::string& model, const std::string& parallelism, const std::string& extra, int stage) {
    return sim::communicators(
        model::parse_scenario("model: " + model +
                                  "\nhardware: {gpu: h100-sxm, topology: ib-rail, nodes: 8}\n"
                                  "workload: {phase: train, batch: 1, seq_len: 2048, microbatches: 8}\nparallelism: " +
                                  parallelism + "\n" + extra + "variants: [{name: sp, tp_mode: sp}]\n",
                              "c.yaml"),
        stage);
  };
  const sim::Communicators middle = comms("llama-3.1-8b", "{tp: 2, pp: 4, dp: 8}", "fsdp: {shard_degree: 4}\n", 1);
  CHECK(middle.collectives == 4);  // tp, dp's shard and replicate groups, pp
  CHECK(middle.peers == 2);
  CHECK(comms("llama-3.1-8b", "{tp: 2, pp: 4, dp: 8}", "fsdp: {shard_degree: 4}\n", 0).peers == 1);
  const sim::Communicators experts = comms("qwen3-30b-a3b", "{tp: 1, ep: 8, dp: 8}", "", 0);
  CHECK(experts.collectives == 2);  // dp, ep
  CHECK(experts.peers == 7);
}

TEST_CASE("a variant fits while its memory stays within the HBM the GPU gives, not the HBM it is sold with",
          "[sim][memory]") {
  const sim::GpuSpec h100 = test::gpu_preset("h100-sxm");
  CHECK(sim::usable_hbm_bytes(h100) == Approx(79.11 * sim::kGiB));
  sim::VariantRun v;
  v.memory = model::MemoryFootprint{};
  v.memory->weights_bytes = sim::usable_hbm_bytes(h100) - 1e6;
  CHECK(*sim::fits_memory(v, h100));
  v.memory->weights_bytes = sim::usable_hbm_bytes(h100) + 1e6;
  CHECK(v.memory->device_bytes() < h100.hbm_bytes + 5e9);  // below the sold 80 GB plus its GiB rounding
  CHECK_FALSE(*sim::fits_memory(v, h100));
}

TEST_CASE("every GPU preset states its usable HBM, within 10% of what it is sold with, and its runtime memory",
          "[sim][memory]") {
  for (const std::string& name : model::preset_names("gpus")) {
    INFO(name);
    const sim::GpuSpec gpu = test::gpu_preset(name);
    CHECK(gpu.hbm_usable_bytes > 0.9 * gpu.hbm_bytes);
    CHECK(gpu.hbm_usable_bytes < 1.1 * gpu.hbm_bytes);
    CHECK(gpu.runtime_memory.given);
    CHECK_FALSE(gpu.runtime_memory.source.empty());
  }
}

TEST_CASE("tpsim's tensors of the H200 memory probe's training steps against the allocator's peaks it measured",
          "[sim][memory]") {
  // real/results/h200-2026-12-04/torch: one H200, PyTorch 2.11, a Llama-3-8B-shaped stack of 1, 2 and 4 layers.
  const std::string dir = std::string(TPSIM_SOURCE_DIR) + "/real/results/h200-2026-12-04/torch/";
  std::ifstream file(dir + "memory.json");
  const nlohmann::json measured = nlohmann::json::parse(file);
  const model::Scenario probe = model::load_scenario(dir + "memory_probe.yaml");
  double fitted = 0;
  for (const nlohmann::json& row : measured["rows"]) {
    fitted += row["max_reserved"].get<double>() / row["max_allocated"].get<double>() - 1;
  }
  // The GPU preset's reserve is these steps' mean (fitted on them, so this checks the preset against its source).
  CHECK(test::gpu_preset("h200-sxm").runtime_memory.allocator_reserve == Approx(fitted / 3).margin(5e-4));
  for (const nlohmann::json& row : measured["rows"]) {
    model::Scenario s = probe;
    s.arch.layers = row["layers"].get<int64_t>();
    s.workload.layers = s.arch.layers;
    const model::MemoryFootprint m = *sim::run_scenario(s).variants.front().memory;
    const double allocated = row["max_allocated"].get<double>();
    INFO("layers " << s.arch.layers << ": tensors " << m.tensor_bytes() / sim::kGiB << " GiB, measured "
                   << allocated / sim::kGiB << " GiB");
    // Within 15%: tpsim counts the gradients held, the probe has none at its peak (the loss, gradients set to None
    // after each step); the probe's loss keeps fp32 logits, their log_softmax and two fp32 gradients of them, tpsim
    // a fused cross-entropy's fp32 softmax; the probe's eager norms, RoPE and repeat_kv save more per layer.
    CHECK(m.tensor_bytes() == Approx(allocated).epsilon(0.15));
    CHECK(m.tensor_bytes() < allocated);  // the loss's tensors outweigh the gradients at every depth measured
    // The CUDA context beside the reserve is the one these steps measured.
    const double context = row["device_used_after"].get<double>() - row["reserved_after"].get<double>();
    CHECK(m.context_bytes == Approx(context).epsilon(0.01));
  }
}

TEST_CASE("an inline GPU's usable HBM and runtime memory are optional, and refused at their key when malformed",
          "[sim][memory]") {
  const std::string gpu =
      "{name: g, peak_bf16_tflops: 989, hbm_GBps: 3350, sm_count: 132, nvlink_GBps: 450, compute_capability: 9.0, "
      "hbm_GB: 80";
  const auto read = [](const std::string& text) {
    const model::YamlReader in("g.yaml");
    return sim::read_gpu_spec(in, in.parse_text(text));
  };
  const sim::GpuSpec plain = read(gpu + "}");
  CHECK(sim::usable_hbm_bytes(plain) == plain.hbm_bytes);  // the sold figure stands in
  CHECK_FALSE(plain.runtime_memory.given);
  model::MemoryFootprint m;
  m.weights_bytes = 1e9;
  sim::add_runtime_memory(m, plain.runtime_memory, sim::Communicators{1, 1});
  CHECK(m.device_bytes() == m.tensor_bytes());  // tensors only
  CHECK_THROWS_WITH(read(gpu + ", runtime_memory: 5}"), Contains("g.yaml:1:") && Contains("gpu.runtime_memory"));
  CHECK_THROWS_WITH(read(gpu + ", runtime_memory: {context_GB: 1}}"), Contains("allocator_reserve"));
  CHECK_THROWS_WITH(read(gpu + ", hbm_usable_GiB: 90}"), Contains("gpu.hbm_usable_GiB"));  // past 10% above 80 GB
}
