// FP8 training recipes: the quantisation kernels each recipe launches around a linear's three GEMMs,
// their count and bytes against the recipe's published per-linear totals, and what the step keeps.
#include <catch2/catch.hpp>

#include <map>

#include "model/graph/graph_builder.hpp"
#include "model/memory/memory_footprint.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::Fp8Recipe;
using model::OpStage;

namespace {

model::Workload fp8_step(Fp8Recipe recipe) {
  model::Workload w = test::train_workload(1, 2048, 1, model::Recompute::kNone, 1, false);
  w.dtype = recipe == Fp8Recipe::kNone ? model::Dtype::kBf16 : model::Dtype::kFp8;
  w.fp8_recipe = recipe;
  return w;
}

model::LayerGraph step_graph(Fp8Recipe recipe, model::TpMode mode = model::TpMode::kTp, int chunks = 1) {
  return model::build_layer_graph(model::load_model_preset("llama-3.1-8b"), fp8_step(recipe), 8,
                                  test::variant(mode, chunks));
}

// The quantisation kernels of the ops named L0.attn.qkv_proj*: count and HBM bytes, by pass.
struct Quantisation {
  int forward = 0, backward = 0, rescales = 0;
  double forward_bytes = 0, backward_bytes = 0, rescale_bytes = 0;
};

Quantisation qkv_quantisation(const model::LayerGraph& g) {
  Quantisation q;
  for (const model::Op& op : g.ops()) {
    if (op.name.rfind("L0.attn.qkv_proj", 0) != 0) continue;
    const double bytes = op.bytes_read + op.bytes_written;
    if (op.quantisation) {
      (op.stage == OpStage::kForward ? q.forward : q.backward) += 1;
      (op.stage == OpStage::kForward ? q.forward_bytes : q.backward_bytes) += bytes;
    } else if (op.name.ends_with(".rescale")) {
      ++q.rescales;
      q.rescale_bytes += bytes;
    }
  }
  return q;
}

// The QKV linear of Llama-3.1-8B at tp 8 over 2048 tokens: x [T, K], W [N, K], dy [T, N].
constexpr double T = 2048, K = 4096, N = (4 + 2 * 1) * 128;

}  // namespace

TEST_CASE("an fp8 step launches the recipe's quantisation kernels, with the bytes its published totals give") {
  struct Expected {
    Fp8Recipe recipe;
    int forward, backward, rescales;
    double forward_bytes, backward_bytes, rescale_bytes;
  };
  const double tile = 1.0 / 32, block = 1.0 / 4096, mx = 1.0 / 32;
  const Expected cases[] = {
      // tensorwise: amax and cast of W and x forward; W's cast, dy's amax and two-copy cast for the data
      // gradient; x's transposed cast for the weight gradient (the bf16 input is what autograd saves).
      {Fp8Recipe::kTensorwise, 4, 4, 0, 5 * T * K + 5 * N * K, 3 * N * K + 6 * T * N + 3 * T * K, 0},
      // rowwise: fused row-amax casts forward; column amax then transposed cast for every dim1 copy
      // backward, and each backward GEMM's output rescaled (bf16 read and write).
      {Fp8Recipe::kRowwise, 2, 7, 2, 3 * T * K + 3 * N * K, 5 * N * K + 3 * T * N + 5 * T * K + 5 * T * N,
       4 * T * K + 4 * N * K},
      // blockwise: one quantisation kernel per operand layout, fp32 scales per 1x128 tile or 128x128 block.
      {Fp8Recipe::kBlockwise, 2, 4, 0, (3 + tile) * T * K + (3 + block) * N * K,
       (3 + block) * N * K + (3 + tile) * T * N + (3 + tile) * T * K + (3 + tile) * T * N, 0},
      // mxfp8: a cast and a scale swizzle per GEMM operand, e8m0 scales per 32 elements.
      {Fp8Recipe::kMxfp8, 4, 8, 0, (3 + mx + 2 * mx) * (T * K + N * K),
       (3 + mx + 2 * mx) * (N * K + T * N + T * K + T * N), 0},
  };
  for (const Expected& e : cases) {
    INFO(model::to_string(e.recipe));
    const Quantisation q = qkv_quantisation(step_graph(e.recipe));
    CHECK(q.forward == e.forward);
    CHECK(q.backward == e.backward);
    CHECK(q.rescales == e.rescales);
    CHECK(q.forward_bytes == Approx(e.forward_bytes));
    CHECK(q.backward_bytes == Approx(e.backward_bytes));
    CHECK(q.rescale_bytes == Approx(e.rescale_bytes));
  }
  CHECK(qkv_quantisation(step_graph(Fp8Recipe::kNone)).forward == 0);
}

TEST_CASE(
    "an fp8 step runs every layer GEMM at fp8 and the LM head's in bf16, and is otherwise the bf16 step with the "
    "quantisation kernels added") {
  const model::LayerGraph bf16 = step_graph(Fp8Recipe::kNone, model::TpMode::kSp);
  const model::LayerGraph fp8 = step_graph(Fp8Recipe::kTensorwise, model::TpMode::kSp);
  size_t quantisation = 0, gemms = 0;
  for (const model::Op& op : fp8.ops()) {
    quantisation += op.quantisation;
    if (op.kind == model::OpKind::kGemm) {
      ++gemms;
      CHECK(op.fp8 == (op.name.rfind("lm_head", 0) != 0));
    }
  }
  CHECK(gemms > 0);
  CHECK(fp8.size() == bf16.size() + quantisation);
  CHECK(fp8.model_flops() == Approx(bf16.model_flops()).epsilon(1e-12));
}

TEST_CASE(
    "Transformer Engine's kernels cast each operand once, with an amax pass only under current scaling, and cast the "
    "weights in the step's first micro-batch only") {
  // The QKV linear's quantisation ops of one micro-batch (mb0., mb1.) of a two-micro-batch step: forward and
  // backward bytes, and how many ops read the weight.
  struct Counted {
    double forward_bytes = 0, backward_bytes = 0;
    int weight_ops = 0, ops = 0;
  };
  const auto counted = [](Fp8Recipe recipe, const std::string& micro_batch) {
    model::Workload w = fp8_step(recipe);
    w.microbatches = 2;
    w.implementation.fp8_kernels = model::Fp8Kernels::kTransformerEngine;
    const model::LayerGraph g =
        model::build_layer_graph(model::load_model_preset("llama-3.1-8b"), w, 8, test::variant(model::TpMode::kTp, 1));
    Counted c;
    for (const model::Op& op : g.ops()) {
      if (!op.quantisation || op.name.rfind(micro_batch + "L0.attn.qkv_proj", 0) != 0) continue;
      (op.stage == OpStage::kForward ? c.forward_bytes : c.backward_bytes) += op.bytes_read + op.bytes_written;
      c.weight_ops += op.name.find(".w.") != std::string::npos;
      ++c.ops;
    }
    return c;
  };
  // Delayed: cast_transpose reads bf16 and writes the fp8 copy and its transpose (2 + 2 bytes per element) of W and
  // x forward, of dy for the data gradient; the weight gradient reads the saved transposes and casts nothing.
  // Current scaling (tensorwise): an amax pass over each operand (2 bytes per element) before its cast_transpose.
  struct Expected {
    Fp8Recipe recipe;
    int kernels_per_operand;
    double bytes_per_element;
  };
  for (const Expected& e : {Expected{Fp8Recipe::kDelayed, 1, 4}, Expected{Fp8Recipe::kTensorwise, 2, 6}}) {
    INFO(model::to_string(e.recipe));
    const Counted first = counted(e.recipe, "mb0."), later = counted(e.recipe, "mb1.");
    CHECK(first.ops == 3 * e.kernels_per_operand);  // W, x, dy
    CHECK(first.weight_ops == e.kernels_per_operand);
    CHECK(first.forward_bytes == Approx(e.bytes_per_element * (T * K + N * K)));
    CHECK(first.backward_bytes == Approx(e.bytes_per_element * T * N));
    CHECK(later.weight_ops == 0);
    CHECK(later.forward_bytes == Approx(e.bytes_per_element * T * K));
    CHECK(later.backward_bytes == Approx(e.bytes_per_element * T * N));
  }
}

TEST_CASE("an async pipeline quantises each piece's rows and casts the weight once per linear") {
  const model::LayerGraph g = step_graph(Fp8Recipe::kTensorwise, model::TpMode::kAsync, 8);
  int weight_casts = 0, input_casts = 0;
  double input_bytes = 0;
  for (const model::Op& op : g.ops()) {
    if (!op.quantisation || op.stage != OpStage::kForward || op.name.rfind("L0.attn.qkv_proj", 0) != 0) continue;
    const bool weight = op.name.find(".w.") != std::string::npos;
    (weight ? weight_casts : input_casts) += 1;
    if (!weight) input_bytes += op.bytes_read + op.bytes_written;
  }
  CHECK(weight_casts == 2);                 // amax and cast
  CHECK(input_casts == 2 * 8);              // amax and cast of each of 8 pieces
  CHECK(input_bytes == Approx(5 * T * K));  // the pieces add up to the whole input
}

TEST_CASE("an fp8 training step keeps bf16 weights, where fp8 inference holds e4m3 ones") {
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const model::Variant tp = test::variant(model::TpMode::kTp);
  const double bf16 = model::memory_footprint(arch, fp8_step(Fp8Recipe::kNone), tp, 8).weights_bytes;
  CHECK(model::memory_footprint(arch, fp8_step(Fp8Recipe::kTensorwise), tp, 8).weights_bytes == bf16);
  model::Workload inference = test::forward_workload(1, 2048, 1);
  inference.dtype = model::Dtype::kFp8;
  CHECK(model::memory_footprint(arch, inference, tp, 8).weights_bytes < bf16);
}
