// implementation.add_norm: a residual add and the RMSNorm reading its sum as one kernel (the norm continuing the
// add's kernel), forward and backward, where the framework's compiled graph fuses them; and the LM head kept in
// bf16 under fp8 recipes. Byte counts and times derived here.
#include <catch2/catch.hpp>
#include <string>

#include "base/input_error.hpp"
#include "input/presets.hpp"
#include "model/graph/graph_builder.hpp"
#include "model/layers/layer_ops.hpp"
#include "model/scenario.hpp"
#include "sim/engine/engine.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::Op;

namespace {

const model::ArchSpec& llama8b() {
  static const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  return arch;
}

model::Workload fused(model::Workload w, model::AddNormKernel kernel) {
  w.implementation.name = "custom";
  w.implementation.add_norm = kernel;
  return w;
}

// Whether `op` reads the output of the op named `name`.
bool reads(const model::LayerGraph& g, const Op& op, const std::string& name) {
  for (const model::Dep& d : op.deps) {
    if (d.data && g.op(d.op).name == name) return true;
  }
  return false;
}

constexpr int64_t kTokens = 2048;
constexpr int kTp = 8;

// Bytes of the rank's rows of the stream ([tokens / tp, hidden], bf16) and of the norm's weight.
double stream_bytes() {
  return 2.0 * static_cast<double>(kTokens / kTp * llama8b().hidden);
}
double weight_bytes() {
  return 2.0 * static_cast<double>(llama8b().hidden);
}

}  // namespace

TEST_CASE(
    "a fused residual add and RMSNorm are one kernel: the norm continues the add, reading the sum from registers "
    "and the weight from memory",
    "[model][add_norm]") {
  const double tensor = stream_bytes(), weight = weight_bytes();
  const model::Workload w = fused(test::forward_workload(1, kTokens, 2), model::AddNormKernel::kFusedInLayer);
  const model::LayerGraph g = model::build_layer_graph(llama8b(), w, kTp, test::variant(model::TpMode::kSp));
  const Op& norm = test::op_named(g, "L0.ffn.norm");
  CHECK(norm.continues_kernel);
  CHECK(reads(g, norm, "L0.attn.residual"));
  CHECK(norm.bytes_read == Approx(weight));  // the weight alone
  CHECK(norm.bytes_in_registers == Approx(tensor));
  CHECK(norm.bytes_written == Approx(tensor));
  // The add is a kernel of its own, unchanged: it reads the stream and the reduced output, writes the sum.
  const Op& add = test::op_named(g, "L0.attn.residual");
  CHECK_FALSE(add.continues_kernel);
  CHECK(add.bytes_read == Approx(2.0 * tensor));
  CHECK(add.bytes_written == Approx(tensor));
  // Per TransformerBlock: the add closing layer 0 and layer 1's first norm are two compiled graphs, two kernels.
  CHECK_FALSE(test::op_named(g, "L1.attn.norm").continues_kernel);
  CHECK_FALSE(test::op_named(g, "final.norm").continues_kernel);
  // A whole-model compile fuses them too.
  const model::LayerGraph whole =
      model::build_layer_graph(llama8b(), fused(test::forward_workload(1, kTokens, 2), model::AddNormKernel::kFused),
                               kTp, test::variant(model::TpMode::kSp));
  CHECK(test::op_named(whole, "L1.attn.norm").continues_kernel);
  CHECK(reads(whole, test::op_named(whole, "L1.attn.norm"), "L0.ffn.residual"));
  CHECK(test::op_named(whole, "final.norm").continues_kernel);
  // The first layer's norm reads no add (the embedding, or nothing before it).
  CHECK_FALSE(test::op_named(whole, "L0.attn.norm").continues_kernel);
  // Unfused: every norm a kernel reading the stream.
  const model::LayerGraph separate = model::build_layer_graph(llama8b(), test::forward_workload(1, kTokens, 2), kTp,
                                                              test::variant(model::TpMode::kSp));
  CHECK_FALSE(test::op_named(separate, "L0.ffn.norm").continues_kernel);
  CHECK(test::op_named(separate, "L0.ffn.norm").bytes_read == Approx(tensor + weight));
}

TEST_CASE("a fused add and norm take one launch overhead and the memory time of the kernel's own traffic",
          "[model][add_norm]") {
  const double tensor = stream_bytes(), weight = weight_bytes();
  const sim::CostModel cost = test::h100_cost();
  const sim::CostProfile profile = test::profile_preset("h100-sxm");
  const double rate = test::gpu_preset("h100-sxm").hbm_Bps * profile.memory.hbm_efficiency;
  const model::LayerGraph g = model::build_layer_graph(
      llama8b(), fused(test::forward_workload(1, kTokens, 1), model::AddNormKernel::kFusedInLayer), kTp,
      test::variant(model::TpMode::kSp));
  const sim::Timeline t = sim::simulate(g, cost);
  double start = 0, end = 0;
  for (const sim::OpSpan& span : t.spans) {
    if (span.rank != 0) continue;
    const std::string& name = g.op(span.op).name;
    if (name == "L0.attn.residual") start = span.start_s;
    if (name == "L0.ffn.norm") end = span.end_s;
  }
  // Reads the stream, the reduced output and the weight; writes the sum and the normed rows.
  const double expected = profile.memory.overhead_s + (2.0 * tensor + weight + 2.0 * tensor) / rate;
  CHECK(end - start == Approx(expected).epsilon(1e-9));
}

TEST_CASE(
    "in a fused backward the add of the skip connection's gradient continues the norm's backward, whose result "
    "never leaves registers",
    "[model][add_norm]") {
  const double tensor = stream_bytes(), weight = weight_bytes();
  const model::Workload w = fused(test::train_workload(1, kTokens, 1), model::AddNormKernel::kFusedInLayer);
  const model::LayerGraph g = model::build_layer_graph(llama8b(), w, kTp, test::variant(model::TpMode::kSp));
  for (const std::string module : {"attn", "ffn"}) {
    const Op& norm = test::op_named(g, "L0." + module + ".norm.backward");
    const Op& add = test::op_named(g, "L0." + module + ".residual.backward");
    CHECK(norm.bytes_written == 0.0);
    CHECK(norm.bytes_read == Approx(2.0 * tensor + weight));
    CHECK(add.continues_kernel);
    CHECK(reads(g, add, "L0." + module + ".norm.backward"));
    CHECK(add.bytes_read == Approx(tensor));  // the skip connection's gradient
    CHECK(add.bytes_written == Approx(tensor));
  }
  const model::LayerGraph separate =
      model::build_layer_graph(llama8b(), test::train_workload(1, kTokens, 1), kTp, test::variant(model::TpMode::kSp));
  CHECK(test::op_named(separate, "L0.ffn.norm.backward").bytes_written == Approx(tensor));
  CHECK_FALSE(test::op_named(separate, "L0.ffn.residual.backward").continues_kernel);
  CHECK(test::op_named(separate, "L0.ffn.residual.backward").bytes_read == Approx(2.0 * tensor));
}

TEST_CASE(
    "a recomputed norm whose add is not re-issued just before it runs as a kernel of its own and reads the stream, "
    "one re-issued right after its add still continues it, under full and selective recomputation",
    "[model][add_norm]") {
  const double tensor = stream_bytes(), weight = weight_bytes();
  // Full recomputation builds the layer again (stream_norm decides); selective re-issues the forward's ops
  // (ProgramBuilder::repeat decides).
  for (const model::Recompute recompute : {model::Recompute::kFull, model::Recompute::kSelective}) {
    const model::Workload w = fused(test::train_workload(1, kTokens, 2, recompute), model::AddNormKernel::kFused);
    const model::LayerGraph g = model::build_layer_graph(llama8b(), w, kTp, test::variant(model::TpMode::kSp));
    // Layer 1's first norm continues layer 0's closing add in the forward, which its recomputation does not
    // re-issue.
    CHECK(test::op_named(g, "L1.attn.norm").continues_kernel);
    const Op& alone = test::op_named(g, "L1.recompute.attn.norm");
    CHECK_FALSE(alone.continues_kernel);
    CHECK(alone.bytes_read == Approx(tensor + weight));
    CHECK(alone.bytes_in_registers == 0.0);
    // Within the layer the recomputed add is re-issued just before the norm: still one kernel.
    const Op& inner = test::op_named(g, "L1.recompute.ffn.norm");
    CHECK(inner.continues_kernel);
    CHECK(reads(g, inner, "L1.recompute.attn.residual"));
    CHECK(inner.bytes_read == Approx(weight));
  }
}

TEST_CASE("a norm continuing its add is launched with it: on a host-bound GPU it starts as the add ends",
          "[model][add_norm]") {
  model::LayerGraph graph(1);
  model::ProgramBuilder b(graph, model::kBf16Bytes);
  const model::OpId add = b.memory("add", 4096, 2048, 1024, "", {});
  const model::OpId norm = b.continue_kernel(add, "norm", 2048, 64, 2048, 4096, "", {});
  const model::OpId next = b.memory("next", 2048, 2048, 0, "", {norm});
  const double host = 1e-3;  // far longer than any of these kernels
  const sim::Timeline t = sim::simulate(graph, test::h100_cost(), sim::launch_costs(host));
  double add_end = 0, norm_start = 0, next_start = 0;
  for (const sim::OpSpan& span : t.spans) {
    if (span.op == add) add_end = span.end_s;
    if (span.op == norm) norm_start = span.start_s;
    if (span.op == next) next_start = span.start_s;
  }
  CHECK(norm_start == Approx(add_end).margin(1e-12));
  CHECK(next_start >= 2 * host);  // the next kernel is the host's second launch
  // A continuation needs its kernel last on the stream.
  CHECK_THROWS_AS(b.continue_kernel(add, "late", 0, 0, 0, 0, "", {}), std::logic_error);
}

TEST_CASE("a norm that must wait for its layer's gathered weights (FSDP) does not continue the add before the wait",
          "[model][add_norm]") {
  model::LayerGraph graph(kTp);
  model::ProgramBuilder b(graph, model::kBf16Bytes);
  const model::OpId add = b.memory("add", 4096, 2048, 1024, "", {});
  CHECK(b.can_continue(add));
  b.wait_for_weights(b.collective("weights.all_gather", model::CollectiveKind::kAllGather, 1 << 20, "", {}));
  CHECK_FALSE(b.can_continue(add));
  // The norm is a kernel of its own, and it takes the wait.
  model::LayerContext ctx;
  ctx.local_tokens = 8;
  ctx.arch.hidden = 64;
  ctx.workload.implementation.add_norm = model::AddNormKernel::kFused;
  const model::OpId norm = model::stream_norm(b, ctx, "norm", model::ModuleInput{add, true});
  CHECK_FALSE(graph.op(norm).continues_kernel);
  CHECK(b.weights_reader() == norm);
}

TEST_CASE(
    "implementation.add_norm is read from the scenario, set by the compiled frameworks' presets, and refused "
    "with its valid values",
    "[model][add_norm]") {
  const auto scenario = [](const std::string& implementation) {
    return "name: t\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nimplementation: " + implementation +
           "\nworkload: {phase: forward, batch: 1, seq_len: 1024, layers: 1}\nparallelism: {tp: 8}\nvariants: "
           "[{name: sp, tp_mode: sp}]\n";
  };
  CHECK(model::parse_scenario(scenario("{add_norm: fused}"), "t.yaml").workload.implementation.add_norm ==
        model::AddNormKernel::kFused);
  CHECK(model::parse_scenario(scenario("{preset: torchtitan-2025, add_norm: separate}"), "t.yaml")
            .workload.implementation.add_norm == model::AddNormKernel::kSeparate);
  CHECK(model::implementation_preset("torchtitan-2024").add_norm == model::AddNormKernel::kFusedInLayer);
  CHECK(model::implementation_preset("gpt-fast").add_norm == model::AddNormKernel::kFused);
  CHECK(model::implementation_preset("vllm").add_norm == model::AddNormKernel::kFused);
  CHECK(model::implementation_preset("megatron-te").add_norm == model::AddNormKernel::kSeparate);
  CHECK_THROWS_WITH(model::parse_scenario(scenario("{add_norm: triton}"), "t.yaml"),
                    Catch::Contains("t.yaml:4:") && Catch::Contains("implementation.add_norm") &&
                        Catch::Contains("separate, fused_in_layer, fused"));
}

TEST_CASE("under an fp8 recipe the LM head's GEMMs run in bf16 with no quantisation kernels, the layers' in fp8",
          "[model][fp8]") {
  model::Workload w = test::train_workload(1, kTokens, 1);
  w.whole_model = true;
  w.dtype = model::Dtype::kFp8;
  w.fp8_recipe = model::Fp8Recipe::kTensorwise;
  const model::LayerGraph g = model::build_layer_graph(llama8b(), w, kTp, test::variant(model::TpMode::kSp));
  int head_gemms = 0, layer_gemms = 0;
  for (const Op& op : g.ops()) {
    const bool head = op.name.rfind("lm_head", 0) == 0;
    if (head) CHECK_FALSE(op.quantisation);
    if (op.kind != model::OpKind::kGemm) continue;
    if (head) {
      ++head_gemms;
      CHECK_FALSE(op.fp8);
    } else if (op.name.rfind("L0.", 0) == 0) {
      ++layer_gemms;
      CHECK(op.fp8);
    }
  }
  CHECK(head_gemms == 3);  // forward, data gradient, weight gradient
  CHECK(layer_gemms > 0);
}
