// Scenario files: valid ones resolve; malformed ones fail with file:line:col and what is valid.
#include <catch2/catch.hpp>

#include <algorithm>
#include <utility>

#include "base/input_error.hpp"
#include "input/gpu_reader.hpp"
#include "model/graph/graph_builder.hpp"
#include "model/scenario.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

const std::string kValid = R"(name: t
model: llama-3.1-8b
hardware: {gpu: h100-sxm, topology: nvswitch}
workload:
  phase: prefill
  batch: 2
  seq_len: 1024
  layers: 2
parallelism: {tp: 8}
variants:
  - {name: base, tp_mode: sp}
  - {name: fast, tp_mode: async, chunks: 16, transport: sm, order: direct, boundary_overlap: true}
)";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("a valid scenario resolves its model, workload and variants") {
  const model::Scenario s = model::parse_scenario(kValid, "s.yaml");
  CHECK(s.arch.hidden == 4096);
  CHECK(s.workload.phase == model::Phase::kPrefill);
  CHECK(model::primary_pass(s.workload).tokens() == 2048);
  CHECK(s.workload.layers == 2);
  REQUIRE(s.variants.size() == 2);
  CHECK(s.variants[1].chunks == 16);
  CHECK(s.variants[1].transport == model::Transport::kSm);
  CHECK(s.variants[1].order == model::ChunkOrder::kDirect);
  CHECK(s.variants[1].boundary_overlap);
  CHECK(s.calibration.value == "default");
}

TEST_CASE("layers: all simulates every layer of the model") {
  const model::Scenario s = model::parse_scenario(replace(kValid, "layers: 2", "layers: all"), "s.yaml");
  CHECK(s.workload.layers == 32);
}

TEST_CASE("an unknown key fails with its file, line and column and the valid keys") {
  CHECK_THROWS_WITH(model::parse_scenario(replace(kValid, "  batch: 2", "  batchsize: 2"), "s.yaml"),
                    Contains("s.yaml:6:3:") && Contains("unknown key 'batchsize'") && Contains("seq_len"));
  CHECK_THROWS_WITH(model::parse_scenario(kValid + "extra: 1\n", "s.yaml"),
                    Contains("s.yaml:13:1:") && Contains("valid keys: name, model"));
}

TEST_CASE("a value of the wrong type fails with its location and what is expected") {
  CHECK_THROWS_WITH(model::parse_scenario(replace(kValid, "batch: 2", "batch: two"), "s.yaml"),
                    Contains("s.yaml:6:10:") && Contains("workload.batch must be a positive integer, got 'two'"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(kValid, "transport: sm", "transport: pigeon"), "s.yaml"),
                    Contains("s.yaml:12:") && Contains("copy_engine, sm"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(kValid, "boundary_overlap: true", "boundary_overlap: 3"), "s.yaml"),
                    Contains("true or false"));
}

TEST_CASE("tp that does not divide the heads fails at parallelism.tp") {
  const std::string qwen = replace(kValid, "model: llama-3.1-8b", "model: qwen2-7b");
  CHECK_THROWS_WITH(model::parse_scenario(qwen, "s.yaml"), Contains("s.yaml:9:19:") && Contains("28 query heads"));
}

TEST_CASE("impossible or unsupported settings are rejected with what is valid") {
  CHECK_THROWS_WITH(model::parse_scenario(replace(kValid, "chunks: 16", "chunks: 3"), "s.yaml"),
                    Contains("s.yaml:12:") && Contains("must divide tp=8"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(kValid, "name: fast", "name: base"), "s.yaml"),
                    Contains("used twice"));
  CHECK_THROWS_WITH(
      model::parse_scenario(replace(kValid, "{name: base, tp_mode: sp}", "{tp_mode: sp, chunks: 2}"), "s.yaml"),
      Contains("applies only to tp_mode: async"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(kValid, "layers: 2", "layers: 99"), "s.yaml"),
                    Contains("has 32 layers"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(kValid, "{tp: 8}", "{tp: 8, pp: 2}"), "s.yaml"),
                    Contains("s.yaml:9:26:") && Contains("needs workload.phase train"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(kValid, "{tp: 8}", "{tp: 8, dp: 2}"), "s.yaml"),
                    Contains("s.yaml:9:26:") && Contains("parallelism.dp > 1 replicates a training step"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(kValid, "{tp: 8}", "{tp: 8, ep: 2}"), "s.yaml"),
                    Contains("s.yaml:9:26:") && Contains("splits an MoE model's experts"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(kValid, "model: llama-3.1-8b", "model: gpt-5"), "s.yaml"),
                    Contains("s.yaml:2:8:") && Contains("unknown model preset"));
  CHECK_THROWS_WITH(model::parse_scenario("name: [unclosed\n", "s.yaml"),
                    Contains("s.yaml:") && Contains("YAML syntax"));
  CHECK_THROWS_WITH(model::load_scenario("no/such/file.yaml"), Contains("cannot open"));
}

TEST_CASE("an inline model mapping and an hf_config path are both accepted") {
  const std::string inline_model =
      replace(kValid, "model: llama-3.1-8b",
              "model: {hidden_size: 1024, intermediate_size: 4096, num_attention_heads: 16,"
              " num_key_value_heads: 8, num_hidden_layers: 4, vocab_size: 1000}");
  const model::Scenario s = model::parse_scenario(inline_model, "s.yaml");
  CHECK(s.arch.head_dim == 64);
  const std::string hf = replace(kValid, "model: llama-3.1-8b", "model: {hf_config: missing/config.json}");
  CHECK_THROWS_WITH(model::parse_scenario(hf, "dir/s.yaml"), Contains("dir/s.yaml:2:20:") && Contains("no such file"));
}

TEST_CASE("an inline model without model_type is a Llama layer, and one with a type follows the config.json rules") {
  const std::string shapes =
      "hidden_size: 1024, intermediate_size: 4096, num_attention_heads: 16, num_hidden_layers: 4, vocab_size: 1000";
  const model::Scenario plain =
      model::parse_scenario(replace(kValid, "model: llama-3.1-8b", "model: {" + shapes + "}"), "s.yaml");
  CHECK(plain.arch.model_type == "llama");
  CHECK_FALSE(plain.arch.qk_norm);
  CHECK_FALSE(plain.arch.qkv_bias);
  const model::Scenario qwen3 = model::parse_scenario(
      replace(kValid, "model: llama-3.1-8b", "model: {model_type: qwen3, " + shapes + "}"), "s.yaml");
  CHECK(qwen3.arch.qk_norm);
  const model::Scenario qwen2 = model::parse_scenario(
      replace(kValid, "model: llama-3.1-8b", "model: {model_type: qwen2, " + shapes + "}"), "s.yaml");
  CHECK(qwen2.arch.qkv_bias);
  // "model: {model_type: " is 20 characters: the value starts at column 21 of line 2.
  CHECK_THROWS_WITH(model::parse_scenario(
                        replace(kValid, "model: llama-3.1-8b", "model: {model_type: bloom, " + shapes + "}"), "s.yaml"),
                    Contains("s.yaml:2:21:") && Contains("\"bloom\" is not modelled") &&
                        Contains("valid: llama, mistral, qwen2, qwen3"));
  const std::string deep = replace(shapes, "num_hidden_layers: 4", "num_hidden_layers: 1025");
  CHECK_THROWS_WITH(model::parse_scenario(replace(kValid, "model: llama-3.1-8b", "model: {" + deep + "}"), "s.yaml"),
                    Contains("s.yaml:2:") && Contains("num_hidden_layers is 1025, above tpsim's limit of 1024"));
  CHECK_THROWS_WITH(
      model::parse_scenario(replace(kValid, "model: llama-3.1-8b", "model: {" + shapes + ", sliding_window: 4096}"),
                            "s.yaml"),
      Contains("unknown key 'sliding_window' in model") && Contains("valid keys: name, model_type"));
}

TEST_CASE("a malformed inference workload is rejected with what is valid") {
  const std::string decode = R"(model: llama-3.1-8b
hardware: {gpu: h100-sxm}
workload: {phase: decode, batch: 8, context_len: 1024, layers: 2}
parallelism: {tp: 8}
variants: [{name: tp, tp_mode: tp}, {name: d, tp_mode: dtp, delta: 1}]
)";
  CHECK_NOTHROW(model::parse_scenario(decode, "d.yaml"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(decode, "layers: 2", "layers: 2, gen_len: 16"), "d.yaml"),
                    Contains("d.yaml:3:") && Contains("gen_len does not apply to phase decode"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(decode, "context_len: 1024, ", ""), "d.yaml"),
                    Contains("needs the key 'context_len'"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(decode, "delta: 1", "delta: 4"), "d.yaml"),
                    Contains("d.yaml:5:") && Contains("less than the 4 modules"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(decode, ", delta: 1", ""), "d.yaml"), Contains("'delta'"));
  // A decode step has one token per sequence: 12 sequences cannot be sharded over 8 ranks.
  CHECK_THROWS_WITH(model::parse_scenario(replace(replace(decode, "batch: 8", "batch: 12"), "{name: tp, tp_mode: tp}",
                                                  "{name: s, tp_mode: sp}"),
                                          "d.yaml"),
                    Contains("d.yaml:5:") && Contains("a pass has 12 tokens"));
  CHECK_THROWS_WITH(
      model::parse_scenario(replace(decode, "{name: tp, tp_mode: tp}", "{tp_mode: tp, delta: 1}"), "d.yaml"),
      Contains("applies only to tp_mode: dtp"));
}

TEST_CASE("an op list scenario needs no model and checks its ops") {
  const std::string ops = R"(hardware: {gpu: h100-sxm}
parallelism: {tp: 4}
workload:
  phase: ops
  ops:
    - {name: g, kind: gemm, m: 1024, n: 1024, k: 1024}
    - {name: ag, kind: collective, collective: allgather, bytes: 64MiB, algorithm: ring, protocol: ll128}
    - {name: x, kind: p2p, bytes: 1MiB, peer: 2, transport: sm, after: [g, ag]}
    - {name: add, kind: elementwise, bytes: 16MiB, after: [x]}
)";
  const model::Scenario s = model::parse_scenario(ops, "ops.yaml");
  REQUIRE(s.workload.ops.size() == 4);
  CHECK(s.workload.ops[1].bytes == 64.0 * 1024 * 1024);
  CHECK(s.workload.ops[2].stream == model::Stream::kComm);
  CHECK(s.variants.size() == 1);
  const model::LayerGraph graph =
      model::build_op_list_graph(s.workload.ops, 4, model::Dtype::kBf16, model::CollectiveAlgorithm::kAuto);
  CHECK(graph.size() == 4);
  CHECK(graph.op(2).send_offset == 2);
  CHECK(graph.op(2).recv_offset == -2);
  CHECK(graph.op(1).algorithm == model::CollectiveAlgorithm::kRing);
  CHECK(graph.op(1).protocol == model::Protocol::kLL128);
  CHECK(graph.op(0).protocol == model::Protocol::kAuto);
  CHECK_THROWS_WITH(model::parse_scenario(replace(ops, "protocol: ll128", "protocol: LL128"), "ops.yaml"),
                    Contains("ops.yaml:7:") && Contains("protocol") && Contains("auto, simple, ll, ll128"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(ops, "transport: sm,", "transport: sm, protocol: ll,"), "ops.yaml"),
                    Contains("ops.yaml:8:") && Contains("only a collective has one (this is a p2p)"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(ops, "after: [g, ag]", "after: [g, later]"), "ops.yaml"),
                    Contains("ops.yaml:8:") && Contains("'later' is not an earlier op"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(ops, "bytes: 64MiB", "bytes: lots"), "ops.yaml"),
                    Contains("ops.yaml:7:") && Contains("'lots' is not a size"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(ops, "k: 1024}", "k: 1024, stream: comm}"), "ops.yaml"),
                    Contains("a gemm runs on the compute stream"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(ops, "phase: ops", "phase: ops\n  batch: 4"), "ops.yaml"),
                    Contains("workload.batch does not apply to phase ops"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(ops, "phase: ops", "phase: forward"), "ops.yaml"),
                    Contains("needs the key 'model'"));
}

TEST_CASE("a variant's protocol reaches every collective of its layers, and an op list's ops without their own") {
  const std::string text =
      "model: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nworkload: {phase: forward, batch: 1, seq_len: 512, layers: 1}\n"
      "parallelism: {tp: 8}\nvariants: [{name: sp, tp_mode: sp, collective: ring, protocol: ll128}]\n";
  const model::Scenario s = model::parse_scenario(text, "v.yaml");
  REQUIRE(s.variants.size() == 1);
  CHECK(s.variants[0].protocol == model::Protocol::kLL128);
  const model::LayerGraph graph = model::build_layer_graph(s.arch, s.workload, 8, s.variants[0]);
  int collectives = 0;
  for (const model::Op& op : graph.ops()) {
    if (op.kind != model::OpKind::kCollective) continue;
    ++collectives;
    CHECK(op.protocol == model::Protocol::kLL128);
  }
  CHECK(collectives >= 2);
  CHECK_THROWS_WITH(model::parse_scenario(replace(text, "protocol: ll128", "protocol: LL128"), "v.yaml"),
                    Contains("v.yaml:5:") && Contains("auto, simple, ll, ll128"));
  // Op lists: an op's own protocol wins, the others take the variant's.
  model::OpSpec own, plain;
  own.name = "own";
  own.kind = plain.kind = "collective";
  plain.name = "plain";
  own.bytes = plain.bytes = 1 << 20;
  own.stream = plain.stream = model::Stream::kComm;
  own.protocol = model::Protocol::kSimple;
  const model::LayerGraph ops = model::build_op_list_graph({own, plain}, 4, model::Dtype::kBf16,
                                                           model::CollectiveAlgorithm::kRing, model::Protocol::kLL);
  CHECK(ops.op(0).protocol == model::Protocol::kSimple);
  CHECK(ops.op(1).protocol == model::Protocol::kLL);
}

TEST_CASE("recompute_layers counts full recomputation's layers and is refused elsewhere, at its line") {
  const std::string train = replace(kValid, "phase: prefill", "phase: train");
  const auto with = [&](const std::string& keys) { return replace(train, "layers: 2", "layers: 2\n  " + keys); };
  CHECK(model::parse_scenario(with("recompute: full\n  recompute_layers: 1"), "s.yaml").workload.recompute_layers == 1);
  CHECK(model::parse_scenario(with("recompute: full"), "s.yaml").workload.recompute_layers == 0);  // every layer
  CHECK_THROWS_WITH(model::parse_scenario(with("recompute_layers: 1"), "s.yaml"),
                    Contains("s.yaml:9:21:") && Contains("set recompute: full"));
  CHECK_THROWS_WITH(model::parse_scenario(with("recompute: full\n  recompute_layers: 3"), "s.yaml"),
                    Contains("s.yaml:10:21:") && Contains("the step runs 2 layers"));
  CHECK_THROWS_WITH(model::parse_scenario(with("recompute: full\n  recompute_layers: 0"), "s.yaml"),
                    Contains("s.yaml:10:21:") && Contains("workload.recompute_layers"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(kValid, "layers: 2", "layers: 2\n  recompute_layers: 1"), "s.yaml"),
                    Contains("s.yaml:9:21:") && Contains("applies only to phase train"));
}

TEST_CASE("phase train reads micro-batches, recomputation and the optimizer, and refuses what it does not model") {
  const std::string train = replace(kValid, "phase: prefill", "phase: train");
  const model::Scenario s = model::parse_scenario(
      replace(train, "layers: 2", "layers: 2\n  microbatches: 4\n  recompute: full\n  optimizer: none"), "s.yaml");
  CHECK(s.workload.phase == model::Phase::kTrain);
  CHECK(s.workload.microbatches == 4);
  CHECK(s.workload.recompute == model::Recompute::kFull);
  CHECK_FALSE(s.workload.optimizer);
  CHECK_THROWS_WITH(model::parse_scenario(replace(kValid, "layers: 2", "layers: 2\n  microbatches: 4"), "s.yaml"),
                    Contains("s.yaml:9:17:") && Contains("applies only to phase train"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(train, "layers: 2", "layers: 2\n  save: [attention]"), "s.yaml"),
                    Contains("s.yaml:9:9:") && Contains("recompute: selective"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(train, "layers: 2", "layers: 2\n  dtype: fp8"), "s.yaml"),
                    Contains("s.yaml:9:10:") && Contains("fp8_recipe: tensorwise, delayed, rowwise, blockwise, mxfp8"));
  CHECK(model::parse_scenario(replace(train, "layers: 2", "layers: 2\n  dtype: fp8\n  fp8_recipe: rowwise"), "s.yaml")
            .workload.fp8_recipe == model::Fp8Recipe::kRowwise);
  CHECK_THROWS_WITH(
      model::parse_scenario(replace(train, "layers: 2", "layers: 2\n  dtype: fp8\n  fp8_recipe: hybrid"), "s.yaml"),
      Contains("s.yaml:10:15:") && Contains("tensorwise, delayed, rowwise, blockwise, mxfp8"));
  // Delayed scaling is Transformer Engine's: refused with torchao's kernels, and Transformer Engine runs only the
  // per-tensor recipes.
  const std::string delayed = replace(train, "layers: 2", "layers: 2\n  dtype: fp8\n  fp8_recipe: delayed");
  CHECK_THROWS_WITH(model::parse_scenario(delayed, "s.yaml"),
                    Contains("s.yaml:10:15:") && Contains("fp8_kernels: transformer_engine"));
  const model::Scenario te =
      model::parse_scenario(delayed + "implementation: {fp8_kernels: transformer_engine}\n", "s.yaml");
  CHECK(te.workload.fp8_recipe == model::Fp8Recipe::kDelayed);
  CHECK(te.workload.implementation.fp8_kernels == model::Fp8Kernels::kTransformerEngine);
  CHECK_THROWS_WITH(
      model::parse_scenario(replace(train, "layers: 2", "layers: 2\n  dtype: fp8\n  fp8_recipe: rowwise") +
                                "implementation: {fp8_kernels: transformer_engine}\n",
                            "s.yaml"),
      Contains("s.yaml:10:15:") && Contains("runs tensorwise (its current scaling) and delayed"));
  CHECK_THROWS_WITH(model::parse_scenario(delayed + "implementation: {fp8_kernels: cutlass}\n", "s.yaml"),
                    Contains("implementation.fp8_kernels") && Contains("torchao, transformer_engine"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(train, "layers: 2", "layers: 2\n  fp8_recipe: rowwise"), "s.yaml"),
                    Contains("s.yaml:9:15:") && Contains("only to dtype fp8"));
  CHECK_THROWS_WITH(
      model::parse_scenario(replace(kValid, "layers: 2", "layers: 2\n  dtype: fp8\n  fp8_recipe: rowwise"), "s.yaml"),
      Contains("s.yaml:10:15:") && Contains("applies only to phase train"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(train, "layers: 2", "layers: 2\n  optimizer: sgd"), "s.yaml"),
                    Contains("adamw, none"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(train, "layers: 2", "layers: 2\n  microbatches: 1025"), "s.yaml"),
                    Contains("s.yaml:9:17:") && Contains("limit of 1024"));
}

TEST_CASE(
    "workload.global_batch derives each replica's micro-batches, and refuses a split that does not hold, at its key") {
  const std::string train = replace(replace(kValid, "phase: prefill", "phase: train"), "{tp: 8}", "{tp: 8, dp: 4}");
  const auto with = [&](const std::string& keys) {
    return model::parse_scenario(replace(train, "layers: 2", "layers: 2\n  " + keys), "s.yaml");
  };
  // 64 sequences per step over 4 replicas running micro-batches of 2 sequences: 8 micro-batches each.
  const model::Scenario s = with("global_batch: 64");
  CHECK(s.workload.global_batch == 64);
  CHECK(s.workload.microbatches == 64 / (4 * 2));
  CHECK(with("global_batch: 64\n  microbatches: 8").workload.microbatches == 8);  // an explicit count that agrees
  CHECK_THROWS_WITH(with("global_batch: 60"),
                    Contains("s.yaml:9:17:") && Contains("does not divide") && Contains("a multiple of 8"));
  CHECK_THROWS_WITH(with("global_batch: 64\n  microbatches: 4"),
                    Contains("s.yaml:10:17:") && Contains("(per replica)") && Contains("set it to 8"));
  CHECK_THROWS_WITH(with("global_batch: 65536"), Contains("s.yaml:9:17:") && Contains("limit of 1024"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(kValid, "layers: 2", "layers: 2\n  global_batch: 64"), "s.yaml"),
                    Contains("s.yaml:9:17:") && Contains("applies only to phase train"));
}

TEST_CASE("selective recomputation reads its save list, TorchTitan's by default, and refuses a bad one at its item") {
  const std::string train = replace(kValid, "phase: prefill", "phase: train");
  const std::string selective = replace(train, "layers: 2", "layers: 2\n  recompute: selective");
  const model::Scenario plain = model::parse_scenario(selective, "s.yaml");
  CHECK(plain.workload.recompute == model::Recompute::kSelective);
  CHECK(model::save_items(plain.workload.save) ==
        std::vector<std::string>{"every_other_matmul", "attention", "reduce_scatter"});
  const auto with_save = [&](const std::string& list) {
    return replace(selective, "recompute: selective", "recompute: selective\n  save: " + list);
  };
  const model::Scenario custom = model::parse_scenario(with_save("[matmul, all_gather]"), "s.yaml");
  CHECK(model::save_items(custom.workload.save) == std::vector<std::string>{"matmul", "all_gather"});
  CHECK(model::save_items(model::parse_scenario(with_save("[]"), "s.yaml").workload.save).empty());
  CHECK_THROWS_WITH(model::parse_scenario(with_save("[attention, softmax]"), "s.yaml"),
                    Contains("s.yaml:10:21:") && Contains("every_other_matmul") && Contains("softmax"));
  CHECK_THROWS_WITH(model::parse_scenario(with_save("[attention, attention]"), "s.yaml"),
                    Contains("s.yaml:10:21:") && Contains("twice"));
  CHECK_THROWS_WITH(model::parse_scenario(with_save("[matmul, every_other_matmul]"), "s.yaml"),
                    Contains("s.yaml:10:9:") && Contains("keep one"));
  CHECK_THROWS_WITH(model::parse_scenario(with_save("attention"), "s.yaml"),
                    Contains("s.yaml:10:9:") && Contains("must be a list"));
}

TEST_CASE("phase train refuses a dtp variant with a delay under recomputation, at its delta key") {
  const std::string train = replace(kValid, "phase: prefill", "phase: train");
  const std::string dtp2 = replace(train, "{name: base, tp_mode: sp}", "{name: base, tp_mode: dtp, delta: 2}");
  CHECK_NOTHROW(model::parse_scenario(dtp2, "s.yaml"));
  CHECK_THROWS_WITH(model::parse_scenario(replace(dtp2, "layers: 2", "layers: 2\n  recompute: full"), "s.yaml"),
                    Contains("s.yaml:12:") && Contains("recompute: none"));
  CHECK_NOTHROW(model::parse_scenario(replace(replace(train, "layers: 2", "layers: 2\n  recompute: full"),
                                              "{name: base, tp_mode: sp}", "{name: base, tp_mode: dtp, delta: 0}"),
                                      "s.yaml"));
}

namespace {

// The 0-based line and column of the first `needle` in `text`.
std::pair<int, int> position_of(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  REQUIRE(at != std::string::npos);
  const size_t line_start = text.rfind('\n', at);
  const int line = static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
  const int col = static_cast<int>(line_start == std::string::npos ? at : at - line_start - 1);
  return {line, col};
}

}  // namespace

TEST_CASE("the keys sim checks when it runs are located where the scenario wrote them") {
  const std::string text = replace(replace(kValid, "topology: nvswitch}", "topology: nvswitch, power_limit_W: 500}"),
                                   "- {name: base, tp_mode: sp}", "- {name: base, tp_mode: sp, protocol: simple}");
  const model::Scenario s = model::parse_scenario(text, "s.yaml");
  CHECK(s.keys.power_limit.file == "s.yaml");
  CHECK(std::pair{s.keys.power_limit.line0, s.keys.power_limit.col0} == position_of(text, "500"));
  REQUIRE(s.keys.variants.size() == 2);
  CHECK(std::pair{s.keys.variants[0].entry.line0, s.keys.variants[0].entry.col0} == position_of(text, "{name: base"));
  REQUIRE(s.keys.variants[0].protocol);
  CHECK(std::pair{s.keys.variants[0].protocol->line0, s.keys.variants[0].protocol->col0} ==
        position_of(text, "simple"));
  CHECK_FALSE(s.keys.variants[1].protocol);
  CHECK_FALSE(s.keys.calibration);  // not given: run errors about the profile point at the GPU
  CHECK(std::pair{s.calibration.at.line0, s.calibration.at.col0} == position_of(text, "h100-sxm"));
  // Past the last variant, the document.
  CHECK(s.keys.variant(2).line0 == s.keys.document.line0);
}

TEST_CASE("an inline GPU mapping's error is raised when the GPU is resolved, not when the scenario is read") {
  const std::string text = replace(kValid, "gpu: h100-sxm", "gpu: {name: x, colour: red}");
  model::Scenario s;
  REQUIRE_NOTHROW(s = model::parse_scenario(text, "s.yaml"));
  CHECK(s.gpu.value == "inline");
  const auto [line, col] = position_of(text, "colour");
  CHECK_THROWS_WITH(sim::resolve_gpu(s), Contains(format_location("s.yaml", line, col)));
}
