// The GPT-style and sliding-window model_types (gpt2, gpt_bigcode, gpt_neox, starcoder2, falcon, phi, mistral's
// window, gemma2, gemma3_text): their parameter counts against the published sizes, what each changes in the
// layer graph, the window's attention FLOPs and KV cache against closed forms, and the located refusals.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "input/model/hf_config.hpp"
#include "model/graph/graph_builder.hpp"
#include "model/memory/memory_footprint.hpp"
#include "model/memory/parameter_count.hpp"
#include "test_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;
using test::op_named;

namespace {

// Every parameter of the model on one GPU: the layers, the embedding (and positions), the final norm and the head.
double total_parameters(const model::ArchSpec& a) {
  const model::TpShard shard = model::shard_for_tp(a, 1);
  return model::layer_parameters_per_rank(a, shard, {0, a.layers}) + model::embedding_parameters_per_rank(a, 1);
}

model::ArchSpec parse(const std::string& text) {
  return model::parse_hf_config(text, "c.json", "c");
}

bool has_op(const model::LayerGraph& g, const std::string& name) {
  const auto& ops = g.ops();
  return std::any_of(ops.begin(), ops.end(), [&](const model::Op& op) { return op.name == name; });
}

// "c.json:line:col:" of the key's quoted name.
std::string at_key(const std::string& text, const std::string& key) {
  const size_t at = text.find("\"" + key + "\"");
  REQUIRE(at != std::string::npos);
  const size_t line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  const size_t line_start = text.rfind('\n', at);
  return "c.json:" + std::to_string(line) + ":" + std::to_string(at - line_start) + ":";
}

// GPT-2 small (openai-community/gpt2 config.json's shapes).
const std::string kGpt2 = R"({
  "model_type": "gpt2",
  "n_embd": 768,
  "n_head": 12,
  "n_layer": 12,
  "n_positions": 1024,
  "n_inner": null,
  "vocab_size": 50257
})";

// Falcon-7B (tiiuae/falcon-7b config.json's shapes, its older key names).
const std::string kFalcon7b = R"({
  "model_type": "falcon",
  "hidden_size": 4544,
  "n_head": 71,
  "n_layer": 32,
  "multi_query": true,
  "parallel_attn": true,
  "bias": false,
  "alibi": false,
  "new_decoder_architecture": false,
  "vocab_size": 65024
})";

// Phi-2 (microsoft/phi-2 config.json's shapes).
const std::string kPhi2 = R"({
  "model_type": "phi",
  "hidden_size": 2560,
  "intermediate_size": 10240,
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "partial_rotary_factor": 0.4,
  "qk_layernorm": false,
  "vocab_size": 51200
})";

}  // namespace

TEST_CASE("Pythia-12B and GPT-NeoX-20B count the parameters their model cards list") {
  // EleutherAI/pythia-12b and EleutherAI/gpt-neox-20b model cards.
  CHECK(total_parameters(model::load_model_preset("pythia-12b")) == 11846072320.0);
  CHECK(total_parameters(model::load_model_preset("gpt-neox-20b")) == 20554567680.0);
}

TEST_CASE("Gemma-2-27B counts the non-embedding parameters of the Gemma 2 report's table 2") {
  const model::ArchSpec a = model::load_model_preset("gemma-2-27b");
  // Table 2 of the Gemma 2 report: 26,047,480,320 non-embedding parameters (the final norm included); the tied
  // embedding is the one vocab x hidden matrix.
  CHECK(total_parameters(a) - static_cast<double>(a.vocab * a.hidden) == 26047480320.0);
  CHECK(a.tied_embeddings);
  CHECK(a.style.norms_per_layer == 4);
}

TEST_CASE("GPT-2 small counts 124,439,808 parameters: learned positions, biases, LayerNorms and a tied head") {
  const model::ArchSpec a = parse(kGpt2);
  CHECK(a.hidden == 768);
  CHECK(a.intermediate == 4 * 768);  // n_inner null: 4 x n_embd
  CHECK(a.tied_embeddings);
  CHECK(a.style.learned_positions == 1024);
  CHECK(a.rotary_fraction == 0.0);
  CHECK(total_parameters(a) == 124439808.0);
}

TEST_CASE("Mistral-7B-v0.1 counts 7,241,732,096 parameters and attends through a 4096-token window in every layer") {
  const model::ArchSpec a = model::load_model_preset("mistral-7b-v0.1");
  CHECK(total_parameters(a) == 7241732096.0);
  for (const int64_t layer : {int64_t{0}, a.layers - 1}) CHECK(a.window_at(layer) == 4096);
}

TEST_CASE("Falcon-7B and Phi-2 count their module shapes: one shared norm, multi-query K/V, Phi's head bias") {
  const model::ArchSpec falcon = parse(kFalcon7b);
  CHECK(falcon.kv_heads == 1);  // multi_query without new_decoder_architecture
  CHECK(falcon.style.parallel_residual);
  CHECK(falcon.style.norms_per_layer == 1);
  const double h = 4544, f = 4 * h, d = 64, v = 65024, layers = 32;
  // query_key_value (71 query heads, one K and V), dense, dense_h_to_4h, dense_4h_to_h, input_layernorm; tied
  // word_embeddings, ln_f. No biases (bias false).
  const double falcon_layer = h * (h + 2 * d) + h * h + 2 * h * f + 2 * h;
  CHECK(total_parameters(falcon) == layers * falcon_layer + v * h + 2 * h);
  CHECK(total_parameters(falcon) == 6921720704.0);

  const model::ArchSpec phi = parse(kPhi2);
  CHECK(phi.rotary_fraction == 0.4);
  const double ph = 2560, pf = 10240, pv = 51200;
  // q/k/v and dense with biases, fc1 and fc2 with biases, one LayerNorm; untied embed_tokens and lm_head (with its
  // bias), final_layernorm.
  const double phi_layer = 4 * ph * ph + 4 * ph + 2 * ph * pf + pf + ph + 2 * ph;
  CHECK(total_parameters(phi) == 32 * phi_layer + 2 * pv * ph + pv + 2 * ph);
  CHECK(total_parameters(phi) == 2779683840.0);
}

TEST_CASE("StarCoder2-15B counts its module shapes: biased GQA projections, a GeLU FFN of 4h, an untied head") {
  const model::ArchSpec a = model::load_model_preset("starcoder2-15b");
  CHECK_FALSE(a.tied_embeddings);
  // The StarCoder 2 paper's shapes (arXiv 2402.19173): q and o of h x h, k and v of h x (4 heads x 128), the
  // FFN's c_fc and c_proj of h x 4h, every linear with its bias (use_bias), two LayerNorms with weight and bias
  // per layer; the embedding and the untied head of vocab x h, and the final LayerNorm.
  const double h = 6144, f = 24576, kv = 4 * 128, v = 49152, layers = 40;
  const double layer = 2 * (h * h + h) + 2 * (h * kv + kv) + (h * f + f) + (f * h + h) + 2 * 2 * h;
  CHECK(total_parameters(a) == layers * layer + 2 * v * h + 2 * h);
  // 15.96e9: the "15B" of its name is the paper's rounding (the Hub's safetensors total reads 16B).
  CHECK(total_parameters(a) == 15957889024.0);
}

TEST_CASE("the Llama-family presets count the parameters they counted before the GPT-style types") {
  // Llama-3.1-8B: 8,030,261,248 (meta-llama/Llama-3.1-8B); Qwen3-8B: 8,190,735,360 (Qwen/Qwen3-8B).
  CHECK(total_parameters(model::load_model_preset("llama-3.1-8b")) == 8030261248.0);
  CHECK(total_parameters(model::load_model_preset("qwen3-8b")) == 8190735360.0);
}

TEST_CASE("a GPT-BigCode config keeps one K/V head under multi_query and reads GPT-2's key names") {
  std::string text = kGpt2;
  text.replace(text.find("\"gpt2\""), 6, "\"gpt_bigcode\"");
  const model::ArchSpec mqa = parse(text);
  CHECK(mqa.kv_heads == 1);
  CHECK(mqa.style.learned_positions == 1024);
  text.replace(text.find("\"vocab_size\""), 0, "\"multi_query\": false,\n  ");
  CHECK(parse(text).kv_heads == 12);
}

TEST_CASE("a plain GeLU FFN runs one up projection of the FFN width, and GPT-2 turns no rotary embedding") {
  const model::ArchSpec a = parse(kGpt2);
  const int tp = 4;
  const model::LayerGraph g =
      model::build_layer_graph(a, test::train_workload(1, 1024, 1), tp, test::variant(model::TpMode::kSp));
  CHECK(op_named(g, "L0.ffn.up_proj").gemm.n == 4 * 768 / tp);
  CHECK(op_named(g, "L0.ffn.down_proj").gemm.k == 4 * 768 / tp);
  CHECK(has_op(g, "L0.ffn.gelu"));
  CHECK(has_op(g, "L0.ffn.gelu.backward"));
  CHECK_FALSE(has_op(g, "L0.ffn.swiglu"));
  CHECK_FALSE(has_op(g, "L0.attn.rope"));
  CHECK_FALSE(has_op(g, "L0.attn.rope.backward"));
  // Pythia's rotary turns a quarter of each head.
  const model::LayerGraph neox = model::build_layer_graph(
      model::load_model_preset("pythia-12b"), test::forward_workload(1, 2048, 1), 8, test::variant(model::TpMode::kTp));
  CHECK(has_op(neox, "L0.attn.rope"));
}

TEST_CASE("a sliding window caps prefill attention FLOPs at the integral of min(position, window)") {
  const model::ArchSpec a = model::load_model_preset("mistral-7b-v0.1");
  const int tp = 8;
  const double hq = 32.0 / tp, d = 128, w = 4096;
  for (const int64_t s : {int64_t{2048}, int64_t{16384}}) {
    const model::LayerGraph g =
        model::build_layer_graph(a, test::forward_workload(2, s, 1), tp, test::variant(model::TpMode::kTp));
    const double n = static_cast<double>(s);
    // Queries at positions 0..s: min(x, w) integrates to s^2 / 2 within the window, w^2 / 2 + (s - w) w past it.
    const double pairs = n <= w ? n * n / 2.0 : w * w / 2.0 + (n - w) * w;
    INFO(s);
    CHECK(op_named(g, "L0.attn.core").flops == Approx(4.0 * 2 * hq * d * pairs));
  }
}

TEST_CASE("a decode step past the window reads window + 1 keys per sequence, and its FLOPs stop growing") {
  const model::ArchSpec a = model::load_model_preset("mistral-7b-v0.1");
  const int tp = 8;
  const double batch = 4, kv = 1, d = 128, w = 4096, hq = 4;
  const model::LayerGraph g =
      model::build_layer_graph(a, test::decode_workload(4, 32768, 1), tp, test::variant(model::TpMode::kTp));
  const model::Op& core = op_named(g, "L0.attn.core");
  CHECK(core.flops == Approx(4.0 * batch * hq * d * w));
  // Reads Q, and K and V of the window's cached keys and the new one (bf16).
  CHECK(core.bytes_read == Approx(batch * 1 * hq * d * 2 + 2.0 * batch * (w + 1) * kv * d * 2));
  // Inside the window nothing changes: a context of 1000 reads all of it.
  const model::LayerGraph short_context =
      model::build_layer_graph(a, test::decode_workload(4, 1000, 1), tp, test::variant(model::TpMode::kTp));
  CHECK(op_named(short_context, "L0.attn.core").bytes_read ==
        Approx(batch * hq * d * 2 + 2.0 * batch * (1000 + 1) * kv * d * 2));
}

TEST_CASE("Gemma 2 alternates windowed and full layers, and their KV cache holds min(context, window) and context") {
  const model::ArchSpec a = model::load_model_preset("gemma-2-27b");
  CHECK(a.window_at(0) == 4096);
  CHECK(a.window_at(1) == 0);
  CHECK(a.windowed_count({0, a.layers}) == 23);
  CHECK(a.style.attention_softcap == 50.0);
  model::Workload w = test::decode_workload(2, 8000, a.layers);
  const int tp = 8;
  const model::MemoryFootprint m = model::memory_footprint(a, w, test::variant(model::TpMode::kTp), tp);
  // 16 KV heads over 8 GPUs: 2 each, 128 wide, bf16; the step's context is context_len + 1.
  const double per_token = 2.0 * 2 * 128 * 2;
  CHECK(m.kv_cache_bytes == Approx(per_token * 2 * (23 * 4096.0 + 23 * 8001.0)));
}

TEST_CASE("Mistral's windowed KV cache stops at the window, and a config without one holds the whole context") {
  const model::ArchSpec a = model::load_model_preset("mistral-7b-v0.1");
  const model::Workload w = test::decode_workload(8, 32768, a.layers);
  const double per_token = 2.0 * 1 * 128 * 2;  // 8 KV heads over 8 GPUs
  const model::Variant v = test::variant(model::TpMode::kTp);
  CHECK(model::memory_footprint(a, w, v, 8).kv_cache_bytes == Approx(32 * per_token * 8 * 4096.0));
  model::ArchSpec full = a;
  full.style.window = 0;
  CHECK(model::memory_footprint(full, w, v, 8).kv_cache_bytes == Approx(32 * per_token * 8 * 32769.0));
}

TEST_CASE("unmodelled GPT-style options are refused at their key: ALiBi, Phi's QK LayerNorm, NeoX without biases") {
  std::string alibi = kFalcon7b;
  alibi.replace(alibi.find("\"alibi\": false"), 14, "\"alibi\": true");
  CHECK_THROWS_WITH(parse(alibi), Contains(at_key(alibi, "alibi")) && Contains("ALiBi") && Contains("does not model"));
  std::string qk = kPhi2;
  qk.replace(qk.find("\"qk_layernorm\": false"), 21, "\"qk_layernorm\": true");
  CHECK_THROWS_WITH(parse(qk), Contains(at_key(qk, "qk_layernorm")) && Contains("LayerNorms on the q and k heads"));
  const std::string neox = R"({"model_type": "gpt_neox", "hidden_size": 64, "intermediate_size": 256,
    "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 100,
    "attention_bias": false})";
  CHECK_THROWS_WITH(parse(neox), Contains(at_key(neox, "attention_bias")) && Contains("does not model"));
}

TEST_CASE("Gemma's layer_types name each layer's attention, and a wrong kind is refused at the key") {
  const std::string base = R"({"model_type": "gemma2", "hidden_size": 64, "intermediate_size": 256,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "num_hidden_layers": 3, "vocab_size": 100,
    "sliding_window": 512, "layer_types": )";
  const model::ArchSpec a = parse(base + R"(["full_attention", "sliding_attention", "sliding_attention"]})");
  CHECK(a.window_at(0) == 0);
  CHECK(a.window_at(1) == 512);
  CHECK(a.window_at(2) == 512);
  const std::string bad = base + R"(["full_attention", "linear_attention", "full_attention"]})";
  CHECK_THROWS_WITH(parse(bad), Contains(at_key(bad, "layer_types")) && Contains("layer_types[1]") &&
                                    Contains("valid: sliding_attention, full_attention"));
}

TEST_CASE("Gemma's norms after attention and after the MLP run as kernels, forward and backward, and Llama's do not") {
  const model::ArchSpec gemma = model::load_model_preset("gemma-2-27b");
  const model::LayerGraph g =
      model::build_layer_graph(gemma, test::train_workload(1, 4096, 1), 8, test::variant(model::TpMode::kSp));
  for (const char* name :
       {"L0.attn.post_norm", "L0.ffn.post_norm", "L0.attn.post_norm.backward", "L0.ffn.post_norm.backward"}) {
    INFO(name);
    CHECK(has_op(g, name));
  }
  // Over the rank's rows of the sequence-parallel stream: reads them and the weight, writes them (bf16).
  const double rows = 4096.0 / 8, bytes = rows * 4608 * 2;
  CHECK(op_named(g, "L0.attn.post_norm").bytes_read == Approx(bytes + 4608 * 2));
  CHECK(op_named(g, "L0.attn.post_norm").bytes_written == Approx(bytes));
  const model::LayerGraph llama = model::build_layer_graph(
      model::load_model_preset("llama-3.1-8b"), test::train_workload(1, 4096, 1), 8, test::variant(model::TpMode::kSp));
  CHECK_FALSE(has_op(llama, "L0.attn.post_norm"));
}
