// What a training step holds beside its parameters: the linears' saved inputs as Transformer Engine keeps them
// against autograd's, and the eager fp32 loss's gradients at the start of the backward, against closed forms.
#include <catch2/catch.hpp>

#include <algorithm>

#include "input/presets.hpp"
#include "model/graph/graph_builder.hpp"
#include "model/memory/activation_memory.hpp"
#include "model/memory/loss_memory.hpp"
#include "model/memory/memory_footprint.hpp"
#include "test_support.hpp"

using namespace tpsim;

namespace {

constexpr int kTp = 8;
constexpr int64_t kTokens = 4096;

// One decoder layer of Llama-3.1-8B's shapes and the final norm, LM head and loss (a pipeline's last stage: the
// layer's output gradient comes from the loss): what its forward saves for the backward.
model::SavedActivations layer_saved(model::SavedGemmInputs inputs, model::TpMode mode, bool fp8) {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  model::Workload w = test::train_workload(1, kTokens, 1, model::Recompute::kNone, 1, false);
  w.embedding = false;
  w.implementation.name = "custom";
  w.implementation.saved_gemm_inputs = inputs;
  if (fp8) {
    w.dtype = model::Dtype::kFp8;
    w.fp8_recipe = model::Fp8Recipe::kTensorwise;
  }
  return model::saved_activations(model::build_layer_graph(arch, w, kTp, test::variant(mode)), inputs);
}

}  // namespace

TEST_CASE("under sequence parallelism Transformer Engine keeps the rank's rows of the three gathered inputs") {
  // Autograd keeps the attention's, the FFN's and the LM head's gathered [T, H] inputs; TE their [T / tp, H] rows
  // (bf16).
  const double hidden = 4096, gathered = kTokens * hidden * 2.0;
  const double as_read = layer_saved(model::SavedGemmInputs::kAsRead, model::TpMode::kSp, false).forward_bytes;
  const double te = layer_saved(model::SavedGemmInputs::kTransformerEngine, model::TpMode::kSp, false).forward_bytes;
  CHECK(as_read - te == Approx(3.0 * gathered * (1.0 - 1.0 / kTp)).epsilon(1e-12));
  // Without sequence parallelism nothing is gathered and bf16 inputs are kept as they are.
  CHECK(layer_saved(model::SavedGemmInputs::kTransformerEngine, model::TpMode::kTp, false).forward_bytes ==
        Approx(layer_saved(model::SavedGemmInputs::kAsRead, model::TpMode::kTp, false).forward_bytes).epsilon(1e-12));
}

TEST_CASE("under fp8 Transformer Engine keeps one-byte copies of the linears' inputs") {
  // Per layer: the attention's and the FFN's inputs as the rank's rows in fp8 (T / tp x H x 1) for autograd's
  // gathered bf16 (T x H x 2); the down projection's input, the SwiGLU output [T, F / tp], in fp8 (1 byte for 2);
  // the output projection's input, the attention output [T, Hq d / tp], which the attention's backward reads too,
  // in bf16 and in fp8 (3 bytes for 2). The LM head stays bf16: its input's rows, as in the bf16 case.
  const double hidden = 4096, ffn = 14336 / kTp, attention_out = 32 * 128 / kTp;
  const double inputs = 2.0 * (kTokens * hidden * 2.0 - kTokens / kTp * hidden * 1.0);
  const double swiglu = kTokens * ffn * 1.0, attention = kTokens * attention_out * 1.0;
  const double as_read = layer_saved(model::SavedGemmInputs::kAsRead, model::TpMode::kSp, true).forward_bytes;
  const double te = layer_saved(model::SavedGemmInputs::kTransformerEngine, model::TpMode::kSp, true).forward_bytes;
  const double head = kTokens * hidden * 2.0 * (1.0 - 1.0 / kTp);
  CHECK(as_read - te == Approx(inputs + swiglu - attention + head).epsilon(1e-12));
  // Plain TP: every input whole, each kept in fp8 (the attention output beside its bf16), the LM head's as read.
  const double tp_as_read = layer_saved(model::SavedGemmInputs::kAsRead, model::TpMode::kTp, true).forward_bytes;
  const double tp_te = layer_saved(model::SavedGemmInputs::kTransformerEngine, model::TpMode::kTp, true).forward_bytes;
  CHECK(tp_as_read - tp_te == Approx(2.0 * kTokens * hidden * 1.0 + swiglu - attention).epsilon(1e-12));
}

TEST_CASE("Transformer Engine gathers each column-parallel linear's rows again in the backward") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  model::Workload w = test::train_workload(1, kTokens, 1, model::Recompute::kNone, 1, false);
  const auto backward_gathers = [&](model::SavedGemmInputs inputs) {
    w.implementation.name = "custom";
    w.implementation.saved_gemm_inputs = inputs;
    const model::LayerGraph g = model::build_layer_graph(arch, w, kTp, test::variant(model::TpMode::kSp));
    return std::count_if(g.ops().begin(), g.ops().end(), [](const model::Op& op) {
      return op.stage == model::OpStage::kBackward && op.kind == model::OpKind::kCollective &&
             op.collective == model::CollectiveKind::kAllGather;
    });
  };
  // The attention's and the FFN's inputs, and the LM head's.
  CHECK(backward_gathers(model::SavedGemmInputs::kTransformerEngine) -
            backward_gathers(model::SavedGemmInputs::kAsRead) ==
        3);
}

TEST_CASE(
    "the eager fp32 loss holds two fp32 gradients of the logits at the start of the backward, three over a "
    "vocabulary sharded by loss_parallel") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  model::Workload w = test::train_workload(2, kTokens, 1);
  w.implementation.name = "custom";
  CHECK(model::loss_transient_bytes(arch, w, kTp) == 0);  // fused
  w.implementation.loss = model::LossKernel::kFp32Eager;
  const double tokens = 2 * kTokens;
  // Sharded over tp: loss_parallel's fused backward holds the zero-filled gradient, exp(x) or the sum, and the product.
  const double columns = (128256.0 + kTp - 1) / kTp;  // 16032 of the vocabulary per rank
  CHECK(model::loss_transient_bytes(arch, w, kTp) == Approx(3.0 * 4.0 * tokens * std::floor(columns)));
  // Every column on one rank: aten's nll_loss and log_softmax backwards, two fp32 tensors.
  CHECK(model::loss_transient_bytes(arch, w, 1) == Approx(2.0 * 4.0 * tokens * 128256.0));
  w.implementation.model_ends = model::ModelEndsMode::kReplicated;
  CHECK(model::loss_transient_bytes(arch, w, kTp) == Approx(2.0 * 4.0 * tokens * 128256.0));
  w.head = false;  // a pipeline stage without the LM head
  CHECK(model::loss_transient_bytes(arch, w, kTp) == 0);
}

TEST_CASE("a layer's recomputation is not held with the loss's gradients, which live before any layer recomputes") {
  // Selective recomputation at tp 1: Llama's vocabulary makes the loss's fp32 gradients larger than a layer's
  // recomputation with the live block, so the step holds the forward's saved tensors and the loss's alone.
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  model::Workload w = test::train_workload(2, kTokens, 1, model::Recompute::kSelective);
  w.implementation.name = "custom";
  w.implementation.loss = model::LossKernel::kFp32Eager;
  const model::Variant sp = test::variant(model::TpMode::kSp);
  const model::SavedActivations saved = model::training_saved_activations(arch, w, sp, 1);
  REQUIRE(saved.recompute_bytes > 0);
  const model::MemoryFootprint m = model::memory_footprint(arch, w, sp, 1, saved);
  model::Workload forward = w;
  forward.phase = model::Phase::kForward;  // the same live block, nothing saved
  const double live = model::memory_footprint(arch, forward, sp, 1).activation_bytes;
  const double loss = model::loss_transient_bytes(arch, w, 1);
  REQUIRE(loss > live + saved.recompute_bytes);
  CHECK(m.activation_bytes == Approx(saved.forward_bytes + loss));
  // A 256-entry vocabulary leaves the layer's: its recomputation with the live block.
  model::ArchSpec small = arch;
  small.vocab = 256;
  const model::SavedActivations small_saved = model::training_saved_activations(small, w, sp, 1);
  const double small_live = model::memory_footprint(small, forward, sp, 1).activation_bytes;
  CHECK(model::memory_footprint(small, w, sp, 1, small_saved).activation_bytes ==
        Approx(small_saved.forward_bytes + small_live + small_saved.recompute_bytes));
}

TEST_CASE("a training step's activations take the larger of the live block and the loss's gradients") {
  model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  model::Workload w = test::train_workload(2, kTokens, 1);
  w.implementation.name = "custom";
  w.implementation.loss = model::LossKernel::kFp32Eager;
  const model::Variant sp = test::variant(model::TpMode::kSp);
  for (const int64_t vocab : {int64_t{128256}, int64_t{256}}) {
    arch.vocab = vocab;
    INFO("vocab " << vocab);
    const model::SavedActivations saved = model::training_saved_activations(arch, w, sp, kTp);
    const model::MemoryFootprint m = model::memory_footprint(arch, w, sp, kTp, saved);
    model::Workload forward = w;
    forward.phase = model::Phase::kForward;  // the same live block, nothing saved
    const double live = model::memory_footprint(arch, forward, sp, kTp).activation_bytes;
    const double loss = model::loss_transient_bytes(arch, w, kTp);
    CHECK(m.activation_bytes - saved.forward_bytes - saved.recompute_bytes == Approx(std::max(live, loss)));
    // Llama's vocabulary makes the loss's the larger; a 256-entry one leaves the block's: both sides are taken.
    CHECK((loss > live) == (vocab > 256));
  }
}

TEST_CASE("the saved activations a process remembers are each input's own, and the step's accumulation shares them") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const model::Variant sp = test::variant(model::TpMode::kSp);
  const model::Workload base = test::train_workload(2, kTokens, 1, model::Recompute::kNone, 1, false);
  // What the step's graph of one micro-batch saves, built afresh.
  const auto built = [&](const model::Workload& w, const model::Variant& v, int tp) {
    model::Workload one = w;
    one.microbatches = 1;
    one.optimizer = false;
    one.data_parallel = model::DataParallel{};
    return model::saved_activations(model::build_layer_graph(arch, one, tp, v), w.implementation.saved_gemm_inputs);
  };
  model::Workload selective = base, later = base, accumulating = base;
  selective.recompute = model::Recompute::kSelective;
  later.first_layer = 1;
  accumulating.microbatches = 4;  // reset for the graph: the same saved activations as base's
  const std::vector<std::pair<const char*, model::Workload>> inputs = {
      {"base", base}, {"selective", selective}, {"later", later}, {"accumulating", accumulating}, {"base again", base}};
  for (const auto& [name, w] : inputs) {
    for (const int tp : {kTp, 4}) {
      INFO(name << ", tp " << tp);
      const model::SavedActivations remembered = model::training_saved_activations(arch, w, sp, tp);
      const model::SavedActivations fresh = built(w, sp, tp);
      CHECK(remembered.forward_bytes == fresh.forward_bytes);
      CHECK(remembered.recompute_bytes == fresh.recompute_bytes);
    }
  }
  // Selective recomputation saves less than none: the memo told them apart.
  const model::SavedActivations none = model::training_saved_activations(arch, base, sp, kTp);
  const model::SavedActivations some = model::training_saved_activations(arch, selective, sp, kTp);
  CHECK(some.forward_bytes + some.recompute_bytes != none.forward_bytes + none.recompute_bytes);
}

TEST_CASE("eager blocks hold every output the selective policy keeps until the layer recomputes, read or not") {
  // TorchTitan's per-op policy keeps the odd matmuls of each layer (q, v, the gate and w2 of its seven). Compiled, w2's
  // output is saved for nothing (the backward does not read it); eager, torch.utils.checkpoint's caching mode holds
  // it until the recomputation replays the layer: [tokens, hidden] in bf16 more per layer, and nothing else.
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  model::Workload w = test::train_workload(2, kTokens, 2, model::Recompute::kSelective);
  w.implementation = model::implementation_preset("torchtitan-2024");
  const model::Variant sp = test::variant(model::TpMode::kSp);
  const model::SavedActivations compiled = model::training_saved_activations(arch, w, sp, 1);
  w.implementation.compiled = false;
  const model::SavedActivations eager = model::training_saved_activations(arch, w, sp, 1);
  const double w2_output = 2.0 * kTokens * static_cast<double>(arch.hidden) * 2;  // batch 2, bf16
  CHECK(eager.forward_bytes - compiled.forward_bytes == Approx(2 * w2_output));
  CHECK(eager.recompute_bytes == Approx(compiled.recompute_bytes));
}
