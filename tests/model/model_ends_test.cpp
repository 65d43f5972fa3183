// The model's ends in inference passes (workload.whole_model): the LM head over each sequence's last
// position, the logits' gather and greedy sampling; and gpt-fast's replicated embedding and LM head.
#include <catch2/catch.hpp>
#include <string>

#include "base/input_error.hpp"
#include "input/presets.hpp"
#include "model/graph/graph_builder.hpp"
#include "model/layers/implementation.hpp"
#include "model/memory/memory_footprint.hpp"
#include "model/scenario.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::Op;
using model::OpKind;

namespace {

const model::ArchSpec& llama2_7b() {
  static const model::ArchSpec arch = model::load_model_preset("llama-2-7b");
  return arch;
}

// Rank 0's op named `name` (outside the layers: no layer prefix), or nullptr.
const Op* find(const model::LayerGraph& g, const std::string& name) {
  for (const Op& op : g.ops()) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

model::Workload whole(model::Workload w, model::ModelEndsMode ends) {
  w.whole_model = true;
  w.implementation.name = "test";
  w.implementation.model_ends = ends;
  return w;
}

}  // namespace

TEST_CASE("a whole-model decode step ends with the vocab-parallel LM head, the logits' all-gather and an argmax") {
  const int tp = 8;
  const int64_t batch = 4;
  const model::Workload w = whole(test::decode_workload(batch, 512, 2), model::ModelEndsMode::kVariant);
  const model::LayerGraph g = model::build_layer_graph(llama2_7b(), w, tp, test::variant(model::TpMode::kTp));
  const int64_t shard = (32000 + tp - 1) / tp;
  const Op* head = find(g, "lm_head");
  REQUIRE(head != nullptr);
  CHECK(head->gemm.m == batch);
  CHECK(head->gemm.n == shard);
  CHECK(head->gemm.k == 4096);
  const Op* gather = find(g, "lm_head.all_gather");
  REQUIRE(gather != nullptr);
  CHECK(gather->kind == OpKind::kCollective);
  CHECK(gather->tensor_bytes == Approx(static_cast<double>(batch * shard * tp) * 2.0));
  const Op* argmax = find(g, "sample.argmax");
  REQUIRE(argmax != nullptr);
  CHECK(argmax->bytes_read == Approx(static_cast<double>(batch * shard * tp) * 2.0));
  CHECK(argmax->bytes_written == Approx(static_cast<double>(batch) * 8.0));
  // The embedding's partial lookups are all-reduced into the stream.
  REQUIRE(find(g, "embedding.all_reduce") != nullptr);
  CHECK(find(g, "loss.softmax") == nullptr);  // inference samples; it computes no loss
}

TEST_CASE("a whole-model prefill projects only each sequence's last position onto the vocabulary") {
  model::Workload w = whole(test::forward_workload(3, 1024, 1), model::ModelEndsMode::kVariant);
  w.phase = model::Phase::kPrefill;
  const model::LayerGraph g = model::build_layer_graph(llama2_7b(), w, 2, test::variant(model::TpMode::kTp));
  const Op* head = find(g, "lm_head");
  REQUIRE(head != nullptr);
  CHECK(head->gemm.m == 3);
  CHECK(head->gemm.n == 16000);
}

TEST_CASE(
    "gpt-fast's replicated embedding and LM head hold the whole vocabulary on every rank and communicate nothing") {
  const int tp = 4;
  const model::Workload w = whole(test::decode_workload(1, 64, 2), model::ModelEndsMode::kReplicated);
  const model::LayerGraph g = model::build_layer_graph(llama2_7b(), w, tp, test::variant(model::TpMode::kTp));
  const Op* head = find(g, "lm_head");
  REQUIRE(head != nullptr);
  CHECK(head->gemm.n == 32000);
  CHECK(find(g, "lm_head.all_gather") == nullptr);
  CHECK(find(g, "embedding.all_reduce") == nullptr);
  const Op* lookup = find(g, "embedding.lookup");
  REQUIRE(lookup != nullptr);
  CHECK(lookup->bytes_read == Approx(4096.0 * 2.0));  // the one token's whole row
  // Every rank stores both whole matrices: 2 x (vocab - vocab / tp) x hidden bf16 values more than sharded.
  const model::Workload sharded = whole(test::decode_workload(1, 64, 2), model::ModelEndsMode::kVariant);
  const model::Variant v = test::variant(model::TpMode::kTp);
  const double extra = model::memory_footprint(llama2_7b(), w, v, tp).weights_bytes -
                       model::memory_footprint(llama2_7b(), sharded, v, tp).weights_bytes;
  CHECK(extra == Approx(2.0 * (32000.0 - 32000.0 / tp) * 4096.0 * 2.0));
  CHECK(model::implementation_preset("gpt-fast").model_ends == model::ModelEndsMode::kReplicated);
}

TEST_CASE("a whole-model forward with replicated ends takes its loss over the whole vocabulary without reductions") {
  const int tp = 4;
  const model::Workload w = whole(test::forward_workload(1, 256, 1), model::ModelEndsMode::kReplicated);
  const model::LayerGraph g = model::build_layer_graph(llama2_7b(), w, tp, test::variant(model::TpMode::kTp));
  const Op* softmax = find(g, "loss.softmax");
  REQUIRE(softmax != nullptr);
  CHECK(softmax->bytes_read == Approx(256.0 * 32000.0 * 2.0));  // bf16 logits of every token, whole vocabulary
  CHECK(find(g, "loss.max.all_reduce") == nullptr);
  CHECK(find(g, "loss.sum_exp.all_reduce") == nullptr);
}

TEST_CASE("replicated model ends in a training step and a whole-model prefill under sequence parallelism are refused") {
  const std::string train =
      "name: t\nmodel: llama-2-7b\nhardware: {gpu: a100-sxm}\n"
      "workload: {phase: train, batch: 1, seq_len: 1024, layers: 1}\nparallelism: {tp: 8}\n"
      "implementation: {preset: gpt-fast, model_ends: replicated}\nvariants: [{name: tp, tp_mode: tp}]\n";
  CHECK_THROWS_WITH(model::parse_scenario(train, "t.yaml"),
                    Catch::Contains("t.yaml:6:48") && Catch::Contains("not modelled in phase train"));
  const std::string prefill =
      "name: t\nmodel: llama-2-7b\nhardware: {gpu: a100-sxm}\n"
      "workload: {phase: prefill, batch: 1, seq_len: 1024, layers: 1, whole_model: true}\nparallelism: {tp: 8}\n"
      "variants: [{name: sp, tp_mode: sp}]\n";
  CHECK_THROWS_WITH(model::parse_scenario(prefill, "t.yaml"),
                    Catch::Contains("t.yaml:6:") && Catch::Contains("use tp or dtp, or drop whole_model"));
}
