// The implementation block: presets and keys, separate projections, layout copies, RoPE and repeat_kv
// kernels, and PyTorch's symmetric-memory async-TP ops, each checked against counts derived here.
#include <catch2/catch.hpp>
#include <string>

#include "base/input_error.hpp"
#include "input/presets.hpp"
#include "model/graph/graph_builder.hpp"
#include "model/scenario.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::Op;
using model::OpKind;

namespace {

const model::ArchSpec& llama8b() {
  static const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  return arch;
}

model::Workload with(model::Workload w, const model::Implementation& implementation) {
  w.implementation = implementation;
  return w;
}

model::Implementation torchtitan() {
  return model::implementation_preset("torchtitan-2024");
}

// Ops of rank 0's program whose names end with `suffix` (layer prefix "L0." dropped).
std::vector<const Op*> named(const model::LayerGraph& g, const std::string& suffix) {
  std::vector<const Op*> out;
  for (const Op& op : g.ops()) {
    if (op.name.size() >= suffix.size() &&
        op.name.compare(op.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out.push_back(&op);
    }
  }
  return out;
}

// Whether `op` depends on `on` (`data`: reads its output; else any dependency, ordering ones too).
bool depends_on(const model::LayerGraph& g, const Op* op, const Op* on, bool data) {
  const auto id = static_cast<model::OpId>(on - g.ops().data());
  for (const model::Dep& d : op->deps) {
    if (d.op == id && (d.data || !data)) return true;
  }
  return false;
}

std::string scenario_text(const std::string& implementation, const std::string& variant = "{name: sp, tp_mode: sp}") {
  return "name: t\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nimplementation: " + implementation +
         "\nworkload: {phase: forward, batch: 1, seq_len: 1024, layers: 1}\nparallelism: {tp: 8}\nvariants: [" +
         variant + "]\n";
}

}  // namespace

TEST_CASE("an implementation preset sets its keys, and a mapping overrides them key by key",
          "[model][implementation]") {
  const model::Scenario preset = model::parse_scenario(scenario_text("torchtitan-2024"), "t.yaml");
  const model::Implementation& i = preset.workload.implementation;
  CHECK(i.name == "torchtitan-2024");
  CHECK(i.attention == model::AttentionKernel::kFa2);
  CHECK(i.separate_qkv);
  CHECK(i.separate_gate_up);
  CHECK(i.rope == model::RopeKernel::kFp32Unfused);
  CHECK(i.repeat_kv);
  CHECK(i.sp_layout_copies);
  CHECK(i.async_tp == model::AsyncTpKernel::kSymmMem);
  CHECK(i.model_ends == model::ModelEndsMode::kNccl);
  CHECK(i.backward_order == model::BackwardOrder::kAutograd);
  const model::Scenario custom = model::parse_scenario(
      scenario_text("{preset: torchtitan-2024, attention: fa3, qkv: fused, backward_order: overlapped}"), "t.yaml");
  CHECK(custom.workload.implementation.name == "torchtitan-2024+custom");
  CHECK(custom.workload.implementation.attention == model::AttentionKernel::kFa3);
  CHECK_FALSE(custom.workload.implementation.separate_qkv);
  CHECK(custom.workload.implementation.separate_gate_up);
  CHECK(custom.workload.implementation.backward_order == model::BackwardOrder::kOverlapped);
  CHECK_FALSE(model::parse_scenario(scenario_text("{}"), "t.yaml").workload.implementation.separate_qkv);
  // Whose fp8 quantisation kernels run: Transformer Engine's under Megatron, torchao's elsewhere.
  CHECK(model::implementation_preset("megatron-te").fp8_kernels == model::Fp8Kernels::kTransformerEngine);
  CHECK(model::implementation_preset("torchtitan-2024").fp8_kernels == model::Fp8Kernels::kTorchao);
}

TEST_CASE("an unknown implementation preset or key is refused at its place with what is valid",
          "[model][implementation]") {
  CHECK_THROWS_WITH(
      model::parse_scenario(scenario_text("torchtitan-2023"), "t.yaml"),
      Catch::Contains("t.yaml:4:17") &&
          Catch::Contains("torchtitan-2024, torchtitan-2025, megatron-te, vllm, vllm-0.6, sglang, gpt-fast"));
  CHECK_THROWS_WITH(model::parse_scenario(scenario_text("{attention: fa4}"), "t.yaml"),
                    Catch::Contains("t.yaml:4:29") && Catch::Contains("profile, fa2, fa3, cudnn"));
  CHECK_THROWS_WITH(model::parse_scenario(scenario_text("{backward_order: eager}"), "t.yaml"),
                    Catch::Contains("t.yaml:4:34") && Catch::Contains("overlapped, autograd"));
  CHECK_THROWS_WITH(model::parse_scenario(scenario_text("{colour: red}"), "t.yaml"),
                    Catch::Contains("t.yaml:4:") && Catch::Contains("async_tp"));
}

TEST_CASE("separate q, k and v GEMMs split the fused projection's columns and keep its FLOPs",
          "[model][implementation]") {
  const auto w = test::forward_workload(1, 4096, 1);
  const model::Variant sp = test::variant(model::TpMode::kSp);
  const model::LayerGraph fused = model::build_layer_graph(llama8b(), w, 8, sp);
  model::Implementation separate;
  separate.name = "custom";
  separate.separate_qkv = true;
  separate.separate_gate_up = true;
  const model::LayerGraph split = model::build_layer_graph(llama8b(), with(w, separate), 8, sp);
  const int64_t d = llama8b().head_dim, q = 32 / 8 * d, kv = 8 / 8 * d;  // 32 query and 8 KV heads over 8 ranks
  REQUIRE(named(split, "qkv_proj.q").size() == 1);
  CHECK(named(split, "qkv_proj.q")[0]->gemm.n == q);
  CHECK(named(split, "qkv_proj.k")[0]->gemm.n == kv);
  CHECK(named(split, "qkv_proj.v")[0]->gemm.n == kv);
  CHECK(named(split, "gate_up_proj.gate")[0]->gemm.n == llama8b().intermediate / 8);
  CHECK(split.matmul_flops() == Approx(fused.matmul_flops()));
  // The last part stands for the whole output: what its readers see is the fused projection's size.
  CHECK(named(split, "qkv_proj.v")[0]->output_bytes == named(fused, "attn.qkv_proj")[0]->output_bytes);
}

TEST_CASE(
    "a separate projection's data gradient runs a GEMM per part over its columns of K, later parts adding into the "
    "first",
    "[model][implementation]") {
  model::Implementation separate;
  separate.name = "custom";
  separate.separate_qkv = true;
  const auto w = with(test::train_workload(1, 2048, 1, model::Recompute::kNone, 1, false), separate);
  const model::LayerGraph g = model::build_layer_graph(llama8b(), w, 8, test::variant(model::TpMode::kSp));
  const std::vector<const Op*> parts = {named(g, "qkv_proj.dgrad.q")[0], named(g, "qkv_proj.dgrad.k")[0],
                                        named(g, "qkv_proj.dgrad.v")[0]};
  const int64_t d = llama8b().head_dim;
  CHECK(parts[0]->gemm.k == 4 * d);
  CHECK(parts[1]->gemm.k == d);
  const double output = 2.0 * static_cast<double>(parts[1]->gemm.m * parts[1]->gemm.n);
  const double operands = 2.0 * static_cast<double>(parts[1]->gemm.m * d + d * parts[1]->gemm.n);
  CHECK(parts[0]->bytes_read == Approx(2.0 * static_cast<double>(parts[0]->gemm.m * 4 * d + 4 * d * parts[0]->gemm.n)));
  CHECK(parts[1]->bytes_read == Approx(operands + output));  // beta = 1: it reads the sum so far
  CHECK(named(g, "qkv_proj.wgrad.k")[0]->gemm.n == d);
}

TEST_CASE(
    "sp layout copies move the gathered tensor once each way around every all-gather and reduce-scatter, and "
    "fused async-TP ops have none",
    "[model][implementation]") {
  const int64_t tokens = 4096, hidden = llama8b().hidden;
  const auto w = with(test::forward_workload(1, tokens, 2), torchtitan());
  const model::LayerGraph sp = model::build_layer_graph(llama8b(), w, 8, test::variant(model::TpMode::kSp));
  const std::vector<const Op*> copies = named(sp, "layout_copy");
  CHECK(copies.size() == 2 * 4);  // two layers, two all-gathers and two reduce-scatters each
  for (const Op* op : copies) {
    CHECK(op->bytes_read == Approx(2.0 * tokens * hidden));  // the whole [tokens, hidden] tensor, bf16
    CHECK(op->bytes_written == op->bytes_read);
  }
  const model::LayerGraph async = model::build_layer_graph(
      llama8b(), w, 8,
      test::variant(model::TpMode::kAsync, 8, model::Transport::kCopyEngine, model::ChunkOrder::kDirect));
  CHECK(named(async, "layout_copy").empty());
}

TEST_CASE(
    "RoPE left unfused in fp32 moves 20 bytes per rotated element where the fused kernel moves 4, and repeat_kv "
    "writes K and V out to every query head",
    "[model][implementation]") {
  const int64_t tokens = 2048;
  const int64_t d = llama8b().head_dim, rotated = (4 + 1) * d;  // q and k columns of one rank (TP=8)
  const auto bytes_of = [](const std::vector<const Op*>& ops) {
    double sum = 0;
    for (const Op* op : ops) sum += op->bytes_read + op->bytes_written;
    return sum;
  };
  const model::Variant tp = test::variant(model::TpMode::kTp);
  const model::LayerGraph fused = model::build_layer_graph(llama8b(), test::forward_workload(1, tokens, 1), 8, tp);
  CHECK(bytes_of(named(fused, "attn.rope")) == Approx(4.0 * tokens * rotated));
  const model::LayerGraph titan =
      model::build_layer_graph(llama8b(), with(test::forward_workload(1, tokens, 1), torchtitan()), 8, tp);
  double rope = 0;
  for (const char* kernel : {"rope.to_fp32", "rope.rotate", "rope.to_bf16"}) rope += bytes_of(named(titan, kernel));
  CHECK(rope == Approx((2 + 4 + 4 + 4 + 4 + 2) * static_cast<double>(tokens * rotated)));
  const std::vector<const Op*> repeat = named(titan, "attn.repeat_kv");
  REQUIRE(repeat.size() == 1);
  CHECK(repeat[0]->bytes_read == Approx(2.0 * 2 * tokens * 1 * d));     // K and V of the rank's one KV head
  CHECK(repeat[0]->bytes_written == Approx(2.0 * 2 * tokens * 4 * d));  // out to its four query heads
}

TEST_CASE("PyTorch's symmetric-memory all-gather matmul: a piece per shard, pulls one at a time on alternating streams",
          "[model][implementation]") {
  const int tp = 8;
  const int64_t tokens = 4096;
  model::Implementation symm;
  symm.name = "custom";
  symm.async_tp = model::AsyncTpKernel::kSymmMem;
  const auto w = with(test::forward_workload(1, tokens, 1), symm);
  const model::LayerGraph g = model::build_layer_graph(
      llama8b(), w, tp,
      test::variant(model::TpMode::kAsync, tp, model::Transport::kCopyEngine, model::ChunkOrder::kDirect));
  std::vector<model::OpId> pulls;
  for (model::OpId id = 0; id < g.size(); ++id) {
    if (g.op(id).name.find("attn.qkv_proj.ag.pull") != std::string::npos) pulls.push_back(id);
  }
  REQUIRE(pulls.size() == tp - 1);
  for (size_t i = 0; i < pulls.size(); ++i) {
    const Op& pull = g.op(pulls[i]);
    const int step = static_cast<int>(i) + 1;
    CHECK(pull.recv_offset == step);
    CHECK(pull.message_bytes == Approx(2.0 * tokens / tp * llama8b().hidden));
    CHECK(pull.stream == (step % 2 == 1 ? model::Stream::kCompute2 : model::Stream::kCompute));
    if (i == 0) continue;
    bool follows_previous = false;  // an ordering dependency: the copy engine serves one pull at a time
    for (const model::Dep& dep : pull.deps) follows_previous |= dep.op == pulls[i - 1] && !dep.data;
    CHECK(follows_previous);
  }
  CHECK(named(g, "attn.qkv_proj.piece7").size() == 1);
  CHECK(named(g, "attn.qkv_proj.piece8").empty());
  const std::vector<const Op*> reduce = named(g, "attn.o_proj.rs.reduce");
  REQUIRE(reduce.size() == 1);
  CHECK(reduce[0]->bytes_read == Approx(tp * 2.0 * tokens / tp * llama8b().hidden));  // every rank's partial
}

TEST_CASE("symmetric-memory async TP refuses chunk counts, transports and orders PyTorch's ops do not run",
          "[model][implementation]") {
  const std::string symm = "{async_tp: symm_mem}";
  CHECK_THROWS_WITH(model::parse_scenario(scenario_text(symm, "{name: a, tp_mode: async, chunks: 16}"), "t.yaml"),
                    Catch::Contains("t.yaml:7:") && Catch::Contains("chunks must be tp=8"));
  CHECK_THROWS_WITH(
      model::parse_scenario(scenario_text(symm, "{name: a, tp_mode: async, chunks: 8, transport: sm}"), "t.yaml"),
      Catch::Contains("use copy_engine"));
  CHECK_NOTHROW(model::parse_scenario(scenario_text(symm, "{name: a, tp_mode: async, chunks: 8}"), "t.yaml"));
}

TEST_CASE("TorchTitan's June 2025 preset makes the 2024 preset's choices but for its compiled loss",
          "[model][implementation]") {
  const model::Implementation old = torchtitan();
  const model::Implementation now = model::implementation_preset("torchtitan-2025");
  CHECK(now.name == "torchtitan-2025");
  CHECK(old.loss == model::LossKernel::kFp32Eager);
  CHECK(now.loss == model::LossKernel::kFused);
  // describe() names every key's value after the preset's name: the same but for the loss.
  model::Implementation same = now;
  same.loss = old.loss;
  CHECK(model::describe(same).substr(now.name.size()) == model::describe(old).substr(old.name.size()));
  CHECK(model::describe(now).find("backward autograd") != std::string::npos);
}

TEST_CASE(
    "sp layout copies also copy the embedding's partial before its reduce-scatter and its gradient after the "
    "all-gather, under async too when the model's ends run NCCL's collectives",
    "[model][implementation]") {
  const int64_t tokens = 2048, hidden = llama8b().hidden;
  const auto w = with(test::train_workload(1, tokens, 1), torchtitan());
  const model::Variant async =
      test::variant(model::TpMode::kAsync, 8, model::Transport::kCopyEngine, model::ChunkOrder::kDirect);
  for (const model::Variant& variant : {test::variant(model::TpMode::kSp), async}) {
    const model::LayerGraph g = model::build_layer_graph(llama8b(), w, 8, variant);
    const std::vector<const Op*> before = named(g, "embedding.reduce_scatter.layout_copy");
    const std::vector<const Op*> after = named(g, "embedding.grad.all_gather.layout_copy");
    REQUIRE(before.size() == 1);
    REQUIRE(after.size() == 1);
    for (const Op* copy : {before[0], after[0]}) {
      CHECK(copy->bytes_read == Approx(2.0 * tokens * hidden));  // the whole [tokens, hidden] tensor, bf16
      CHECK(copy->bytes_written == copy->bytes_read);
    }
    const Op* scatter = named(g, "embedding.reduce_scatter")[0];
    const Op* gather = named(g, "embedding.grad.all_gather")[0];
    CHECK(depends_on(g, scatter, before[0], true));
    CHECK(depends_on(g, after[0], gather, true));
  }
  model::Implementation none = torchtitan();
  none.sp_layout_copies = false;
  const model::LayerGraph plain = model::build_layer_graph(llama8b(), with(test::train_workload(1, tokens, 1), none), 8,
                                                           test::variant(model::TpMode::kSp));
  CHECK(named(plain, "layout_copy").empty());
}

TEST_CASE(
    "in autograd's order a column-parallel linear's input gradient is reduced after its weight gradient, and "
    "beside it otherwise",
    "[model][implementation]") {
  model::Workload w = test::train_workload(1, 2048, 1);
  // The one op of rank 0's program named `suffix` (ops are stored in issue order).
  const auto find = [](const model::LayerGraph& g, const std::string& suffix) {
    const std::vector<const Op*> ops = named(g, suffix);
    REQUIRE(ops.size() == 1);
    return ops[0];
  };
  for (const model::TpMode mode : {model::TpMode::kSp, model::TpMode::kTp}) {
    const std::string reduce =
        mode == model::TpMode::kSp ? "ffn.gate_up_proj.dgrad.reduce_scatter" : "ffn.gate_up_proj.dgrad.all_reduce";
    const model::LayerGraph beside = model::build_layer_graph(llama8b(), w, 8, test::variant(mode));
    CHECK(find(beside, "ffn.gate_up_proj.wgrad") > find(beside, reduce));
    w.implementation.name = "custom";
    w.implementation.backward_order = model::BackwardOrder::kAutograd;
    const model::LayerGraph after = model::build_layer_graph(llama8b(), w, 8, test::variant(mode));
    CHECK(depends_on(after, find(after, reduce), find(after, "ffn.gate_up_proj.wgrad"), false));
    w.implementation = {};
  }
}

TEST_CASE(
    "PyTorch's fused ops reduce-scatter no summed gradient of separate GEMMs: NCCL reduces the q, k, v input "
    "gradient under symmetric-memory async TP, and a fused projection's is pipelined",
    "[model][implementation]") {
  const model::Variant async =
      test::variant(model::TpMode::kAsync, 8, model::Transport::kCopyEngine, model::ChunkOrder::kDirect);
  const model::LayerGraph separate =
      model::build_layer_graph(llama8b(), with(test::train_workload(1, 2048, 1), torchtitan()), 8, async);
  const std::vector<const Op*> reduced = named(separate, "attn.qkv_proj.dgrad.reduce_scatter");
  REQUIRE(reduced.size() == 1);
  CHECK(reduced[0]->kind == OpKind::kCollective);
  CHECK(named(separate, "attn.qkv_proj.dgrad.reduce_scatter.layout_copy").size() == 1);
  CHECK(named(separate, "attn.qkv_proj.dgrad.rs.pull1").empty());
  CHECK(named(separate, "attn.o_proj.dgrad.ag.pull1").size() == 1);  // a row-parallel gradient still pipelines
  model::Implementation fused = torchtitan();
  fused.separate_qkv = false;
  const model::LayerGraph one =
      model::build_layer_graph(llama8b(), with(test::train_workload(1, 2048, 1), fused), 8, async);
  CHECK(named(one, "attn.qkv_proj.dgrad.rs.pull1").size() == 1);
  CHECK(named(one, "attn.qkv_proj.dgrad.reduce_scatter").empty());
}

TEST_CASE(
    "under tensorwise fp8 the float8 TP plan casts each shard before its all-gather, which moves fp8, and the "
    "GEMMs read the gathered fp8 without casting it again",
    "[model][implementation]") {
  const int64_t tokens = 2048, hidden = llama8b().hidden, tp = 8;
  auto w = with(test::train_workload(1, tokens, 1), torchtitan());
  w.dtype = model::Dtype::kFp8;
  w.fp8_recipe = model::Fp8Recipe::kTensorwise;
  const model::LayerGraph g = model::build_layer_graph(llama8b(), w, 8, test::variant(model::TpMode::kSp));
  const std::vector<const Op*> casts = named(g, "L0.attn.qkv_proj.x.cast");
  REQUIRE(casts.size() == 1);  // on the shard only, not again on the gathered tensor
  CHECK(casts[0]->bytes_read == Approx(2.0 * tokens / tp * hidden));
  CHECK(casts[0]->bytes_written == Approx(1.0 * tokens / tp * hidden));
  CHECK(named(g, "L0.attn.qkv_proj.all_gather.layout_copy")[0]->bytes_read == Approx(1.0 * tokens * hidden));
  // The row-parallel output gradient is cast to e5m2 on the shard, gathered, and transposed for the weight gradient.
  CHECK(named(g, "L0.attn.o_proj.dgrad.dy.cast")[0]->bytes_read == Approx(2.0 * tokens / tp * hidden));
  CHECK(named(g, "L0.attn.o_proj.dgrad.dy.transpose")[0]->bytes_read == Approx(1.0 * tokens * hidden));
  // The column-parallel weight gradient transposes the saved gathered fp8 input instead of casting bf16.
  CHECK(named(g, "L0.attn.qkv_proj.wgrad.x.cast_t").empty());
  CHECK(named(g, "L0.attn.qkv_proj.wgrad.x.transpose")[0]->bytes_written == Approx(1.0 * tokens * hidden));
  // Rowwise keeps bf16 collectives, as TorchTitan runs it over plain TP.
  w.fp8_recipe = model::Fp8Recipe::kRowwise;
  const model::LayerGraph rowwise = model::build_layer_graph(llama8b(), w, 8, test::variant(model::TpMode::kSp));
  CHECK(named(rowwise, "L0.attn.qkv_proj.all_gather.layout_copy")[0]->bytes_read == Approx(2.0 * tokens * hidden));
  // Under the symmetric-memory ops every pull moves the fp8 shard.
  w.fp8_recipe = model::Fp8Recipe::kTensorwise;
  const model::LayerGraph async = model::build_layer_graph(
      llama8b(), w, 8,
      test::variant(model::TpMode::kAsync, 8, model::Transport::kCopyEngine, model::ChunkOrder::kDirect));
  CHECK(named(async, "L0.attn.qkv_proj.ag.pull1")[0]->message_bytes == Approx(1.0 * tokens / tp * hidden));
  CHECK(named(async, "L0.attn.o_proj.dgrad.ag.pull1")[0]->message_bytes == Approx(1.0 * tokens / tp * hidden));
}

TEST_CASE("fp8 all-gathers are refused with async TP kernels other than PyTorch's", "[model][implementation]") {
  const std::string text =
      "name: t\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm}\n"
      "implementation: {preset: torchtitan-2025, async_tp: pipeline}\n"
      "workload: {phase: train, batch: 1, seq_len: 1024, layers: 1, dtype: fp8, fp8_recipe: tensorwise}\n"
      "parallelism: {tp: 8}\nvariants: [{name: sp, tp_mode: sp}, {name: a, tp_mode: async, chunks: 8}]\n";
  CHECK_THROWS_WITH(model::parse_scenario(text, "t.yaml"),
                    Catch::Contains("t.yaml:7:") && Catch::Contains("fp8 all-gathers") &&
                        Catch::Contains("use async_tp: symm_mem or fp8_all_gather: false"));
  std::string bf16 = text;
  bf16.replace(bf16.find("dtype: fp8, fp8_recipe: tensorwise"), 34, "dtype: bf16");
  CHECK_NOTHROW(model::parse_scenario(bf16, "t.yaml"));
}

TEST_CASE(
    "a whole-model forward adds the embedding, LM head and loss, whose collectives stay NCCL's under async "
    "when the framework compiles only the blocks",
    "[model][implementation]") {
  model::Implementation symm;
  symm.name = "custom";
  symm.async_tp = model::AsyncTpKernel::kSymmMem;
  auto w = with(test::forward_workload(1, 4096, 1), symm);
  w.whole_model = true;
  const model::Variant async =
      test::variant(model::TpMode::kAsync, 8, model::Transport::kCopyEngine, model::ChunkOrder::kDirect);
  const model::LayerGraph pipelined = model::build_layer_graph(llama8b(), w, 8, async);
  CHECK(named(pipelined, "embedding.lookup").size() == 1);
  CHECK(named(pipelined, "loss.softmax").size() == 1);
  CHECK(named(pipelined, "lm_head.all_gather").empty());
  CHECK(named(pipelined, "lm_head.piece7").size() == 1);
  w.implementation.model_ends = model::ModelEndsMode::kNccl;
  const model::LayerGraph eager = model::build_layer_graph(llama8b(), w, 8, async);
  REQUIRE(named(eager, "lm_head.all_gather").size() == 1);
  CHECK(named(eager, "lm_head.all_gather")[0]->kind == OpKind::kCollective);
  CHECK(named(eager, "embedding.reduce_scatter")[0]->kind == OpKind::kCollective);
  CHECK(named(eager, "lm_head.piece0").empty());
  CHECK(named(eager, "attn.qkv_proj.ag.pull1").size() == 1);  // the layers still pipeline
  const std::string train =
      "name: t\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm}\n"
      "workload: {phase: train, batch: 1, seq_len: 1024, layers: 1, whole_model: true}\nparallelism: {tp: 8}\n"
      "variants: [{name: tp, tp_mode: tp}]\n";
  CHECK_THROWS_WITH(model::parse_scenario(train, "t.yaml"),
                    Catch::Contains("t.yaml:4:") && Catch::Contains("phase train always runs the whole model"));
}

TEST_CASE("a serving framework's host time adds to each decode step whole, or what its overlap scheduler leaves",
          "[model][implementation]") {
  const model::Implementation v0 = model::implementation_preset("vllm-0.6");
  CHECK(v0.attention == model::AttentionKernel::kFa2);  // FlashAttention-3 on Hopper from v0.7.0
  CHECK(model::implementation_preset("vllm").attention == model::AttentionKernel::kFa3);
  CHECK(model::serving_host_seconds(v0, 10e-3) == Approx(4e-3));  // synchronous: all of it
  model::Implementation ahead = model::implementation_preset("sglang");
  REQUIRE(ahead.overlap_scheduler);
  ahead.step_host_s = 3e-3;
  CHECK(model::serving_host_seconds(ahead, 10e-3) == 0.0);          // hidden behind a longer GPU step
  CHECK(model::serving_host_seconds(ahead, 1e-3) == Approx(2e-3));  // what a shorter step leaves
  const model::Scenario s =
      model::parse_scenario(scenario_text("{preset: sglang, step_host_us: 2500, overlap_scheduler: false}"), "t.yaml");
  CHECK(s.workload.implementation.step_host_s == Approx(2.5e-3));
  CHECK_FALSE(s.workload.implementation.overlap_scheduler);
  CHECK_THROWS_WITH(model::parse_scenario(scenario_text("{step_host_us: -1}"), "t.yaml"),
                    Catch::Contains("t.yaml:4:") && Catch::Contains("implementation.step_host_us"));
}
