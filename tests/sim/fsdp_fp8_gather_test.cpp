// FSDP's fp8 all-gather (fsdp.fp8_all_gather, torchao's enable_fsdp_float8_all_gather): each layer linear's fp32 weight
// shard cast to e4m3 before the gather, which moves and holds one byte per weight; the GEMMs cast no weight; the
// scales' amaxes reduced per weight before each gather, or once per step after the optimizer (precompute_fp8_scales).
#include <catch2/catch.hpp>
#include <string>

#include "base/input_error.hpp"
#include "model/graph/graph_builder.hpp"
#include "model/memory/memory_footprint.hpp"
#include "model/memory/parameter_count.hpp"
#include "model/pipeline/pipeline_spec.hpp"
#include "model/scenario.hpp"
#include "test_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

// Llama-3.1-8B at tp 8 over 4 replicas, fp8 tensorwise, with `fsdp` as its fsdp section.
std::string job(const std::string& fsdp, const std::string& recipe = "dtype: fp8, fp8_recipe: tensorwise") {
  return "name: f\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm, topology: ib-rail, nodes: 4}\n"
         "workload: {phase: train, batch: 1, seq_len: 2048, layers: 2, " +
         recipe + "}\nparallelism: {tp: 8, dp: 4}\nfsdp: " + fsdp + "\nvariants: [{name: sp, tp_mode: sp}]\n";
}

// Llama-3.1-8B's shapes on one of 8 TP ranks: a layer's linears (q, k, v, o, gate, up, down) and its two RMSNorms.
constexpr double kHidden = 4096, kFfn = 14336, kKv = 8 * 128, kTp = 8, kDp = 4;
constexpr double kLinear = (kHidden * (kHidden + 2 * kKv) + kHidden * kHidden + 3 * kHidden * kFfn) / kTp;
constexpr double kNorms = 2 * kHidden;

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

int count_ending(const model::LayerGraph& g, const std::string& tail) {
  int n = 0;
  for (const model::Op& op : g.ops()) n += ends_with(op.name, tail) ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE(
    "FSDP's fp8 all-gather moves a layer's linear weights one byte each and its norms two, cast from the fp32 shard",
    "[sim][data_parallel][fp8]") {
  const model::Scenario s = model::parse_scenario(job("{fp8_all_gather: true, precompute_fp8_scales: true}"), "f.yaml");
  const model::LayerGraph g = test::scenario_step_graph(s);
  int layer_gathers = 0, casts = 0;
  for (const model::Op& op : g.ops()) {
    if (op.group == model::CommGroup::kData && op.collective == model::CollectiveKind::kAllGather && op.module >= 0) {
      ++layer_gathers;
      CHECK(op.tensor_bytes == Approx(1.0 * kLinear + 2.0 * kNorms).epsilon(1e-12));
    }
    if (ends_with(op.name, "fp8_cast")) {  // fsdp.fp8_cast, fsdp.backward.fp8_cast before the backward's gather
      ++casts;
      // The rank's 1/dp shard of the linears, read in fp32 and written in e4m3, on the gather's stream.
      CHECK(op.bytes_read == Approx(4.0 * kLinear / kDp).epsilon(1e-12));
      CHECK(op.bytes_written == Approx(kLinear / kDp).epsilon(1e-12));
      CHECK(op.stream == model::Stream::kComm3);
    }
  }
  // Both layers before their forward, the first again before its backward (it resharded): one cast per gather.
  CHECK(layer_gathers == 3);
  CHECK(casts == 3);
  // The GEMMs read the gathered fp8 weights: no weight amax or cast before them, where the bf16 gather has them.
  CHECK(count_ending(g, ".w.amax") + count_ending(g, ".w.cast") == 0);
  const model::Scenario bf16 = model::parse_scenario(job("{}"), "f.yaml");
  const model::LayerGraph plain = test::scenario_step_graph(bf16);
  CHECK(count_ending(plain, ".w.amax") > 0);
  CHECK(count_ending(plain, "fsdp.fp8_cast") == 0);
  // The precomputed scales: one pass over the shards after the optimizer, one all-reduce of one fp32 amax per weight
  // (the idealised layer's fused q/k/v, o, fused gate/up, down: 4 per layer) over the shard group, then the TP group.
  const double weights = 4 * 2;
  int reductions = 0;
  for (const model::Op& op : g.ops()) {
    if (op.name == "fsdp.fp8_scales.all_reduce" || op.name == "fsdp.fp8_scales.tp.all_reduce") {
      ++reductions;
      CHECK(op.tensor_bytes == 4 * weights);
      CHECK(op.stage == model::OpStage::kOptimizer);
      CHECK(op.group ==
            (op.name == "fsdp.fp8_scales.all_reduce" ? model::CommGroup::kData : model::CommGroup::kTensor));
    }
    if (op.name == "fsdp.fp8_scales.amax") CHECK(op.bytes_read == Approx(4.0 * 2 * kLinear / kDp).epsilon(1e-12));
  }
  CHECK(reductions == 2);
  CHECK(count_ending(g, "fp8_amax") == 0);
}

TEST_CASE("without precomputed scales each gather's cast follows its shards' amax and one all-reduce per weight",
          "[sim][data_parallel][fp8]") {
  const model::Scenario s = model::parse_scenario(job("{fp8_all_gather: true}"), "f.yaml");
  const model::LayerGraph g = test::scenario_step_graph(s);
  int amaxes = 0, scalars = 0;
  for (const model::Op& op : g.ops()) {
    if (ends_with(op.name, "fp8_amax")) {
      ++amaxes;
      CHECK(op.bytes_read == Approx(4.0 * kLinear / kDp).epsilon(1e-12));
    }
    if (op.name.find("fp8_amax.w") != std::string::npos) {
      ++scalars;
      CHECK(op.tensor_bytes == 4);
      CHECK(op.group_size == kDp);
    }
  }
  CHECK(amaxes == 3);
  CHECK(scalars == 3 * 4);  // 4 weights per idealised layer, per gather
  CHECK(count_ending(g, "fsdp.fp8_scales.all_reduce") == 0);
}

TEST_CASE("FSDP's fp8 all-gather holds the gathered linears in one byte, the norms and the model's ends in two",
          "[sim][data_parallel][fp8][memory]") {
  const model::Scenario kept =
      model::parse_scenario(job("{fp8_all_gather: true, reshard_after_forward: false}"), "f.yaml");
  const model::Workload whole = model::whole_model_workload(kept.arch, kept.workload);
  const double layers = 32, vocab = 128256;
  const double ends = 2 * (vocab / kTp) * kHidden + kHidden;  // embedding, LM head, final norm
  const model::MemoryFootprint m = model::memory_footprint(kept.arch, whole, kept.variants[0], 8);
  // Every unit stays gathered from its forward to its backward.
  CHECK(m.weights_bytes == Approx(layers * (kLinear + 2 * kNorms) + 2 * ends).epsilon(1e-12));
  model::Workload bf16 = whole;
  bf16.data_parallel.fp8_all_gather = false;
  CHECK(model::memory_footprint(kept.arch, bf16, kept.variants[0], 8).weights_bytes ==
        Approx(2 * layers * (kLinear + kNorms) + 2 * ends).epsilon(1e-12));
  // Resharded: the largest unit twice, here the bf16 LM head with the final norm (a layer's gathered fp8 is smaller).
  const model::Scenario resharded = model::parse_scenario(job("{fp8_all_gather: true}"), "f.yaml");
  const model::Workload w = model::whole_model_workload(resharded.arch, resharded.workload);
  const double head = (vocab / kTp) * kHidden + kHidden;
  REQUIRE(head * 2 > kLinear + 2 * kNorms);
  CHECK(model::memory_footprint(resharded.arch, w, resharded.variants[0], 8).weights_bytes ==
        Approx(2 * 2 * head).epsilon(1e-12));
}

TEST_CASE("a pipeline's micro-batches between its first and last read the weights its first forward gathered in fp8",
          "[sim][data_parallel][fp8][pipeline]") {
  const model::Scenario s = model::parse_scenario(job("{fp8_all_gather: true}"), "f.yaml");
  const model::ChunkWorkloads w = model::chunk_workloads(s.workload, model::ModelChunk{2, false, false});
  CHECK_FALSE(w.microbatch.data_parallel.enabled());
  CHECK(w.microbatch.data_parallel.fp8_all_gather);
  const model::LayerGraph g =
      model::build_pass_graph(s.arch, w.microbatch, model::primary_pass(w.microbatch), 8, s.variants.front());
  CHECK(count_ending(g, ".w.cast") == 0);
  CHECK(count_ending(g, ".x.cast") > 0);  // its activations are cast as before
  CHECK(count_ending(g, "fsdp.fp8_cast") == 0);
}

TEST_CASE("fsdp.fp8_all_gather and precompute_fp8_scales are refused at their key where torchao would not run them",
          "[sim][data_parallel][fp8]") {
  CHECK_THROWS_WITH(model::parse_scenario(job("{fp8_all_gather: true}", "dtype: bf16"), "f.yaml"),
                    Contains("f.yaml:6:") && Contains("needs workload.dtype fp8 with fp8_recipe tensorwise"));
  CHECK_THROWS_WITH(model::parse_scenario(job("{fp8_all_gather: true}", "dtype: fp8, fp8_recipe: rowwise"), "f.yaml"),
                    Contains("f.yaml:6:") && Contains("fp8_recipe rowwise"));
  CHECK_THROWS_WITH(model::parse_scenario(job("{precompute_fp8_scales: true}"), "f.yaml"),
                    Contains("f.yaml:6:") && Contains("needs fsdp.fp8_all_gather: true"));
  std::string moe = job("{fp8_all_gather: true}");
  moe.replace(moe.find("llama-3.1-8b"), 12, "mixtral-8x7b");
  CHECK_THROWS_WITH(model::parse_scenario(moe, "f.yaml"), Contains("f.yaml:6:") && Contains("an MoE"));
}
