// config.json reading: the model_type allow-list, refused architecture keys, key types and shape limits,
// on configs with the keys of the Hugging Face Hub's (tests/model/hf_configs/).
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/input_error.hpp"
#include "input/model/arch_reader.hpp"
#include "input/model/hf_config.hpp"
#include "input/model/hf_keys.hpp"
#include "input/presets.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

const std::string kConfigs = std::string(TPSIM_SOURCE_DIR) + "/tests/model/hf_configs/";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A Hub config with some keys set (values as JSON text), written one key per line.
std::string edited(const std::string& file, const std::vector<std::pair<std::string, std::string>>& keys) {
  nlohmann::json config = nlohmann::json::parse(read_text(kConfigs + file));
  for (const auto& [key, value] : keys) config[key] = nlohmann::json::parse(value);
  return config.dump(2);
}

std::string llama_with(const std::string& key, const std::string& value) {
  return edited("llama-3.1-8b.json", {{key, value}});
}

model::ArchSpec parse(const std::string& text) {
  return model::parse_hf_config(text, "c.json", "c");
}

// "c.json:line:col:" of the key's quoted name, where errors about the key point.
std::string at_key(const std::string& text, const std::string& key) {
  const size_t at = text.find("\"" + key + "\"");
  REQUIRE(at != std::string::npos);
  const size_t line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  const size_t line_start = text.rfind('\n', at);
  const size_t column = line_start == std::string::npos ? at + 1 : at - line_start;
  return "c.json:" + std::to_string(line) + ":" + std::to_string(column) + ":";
}

// Refused at the key, naming it with its value, and saying what it means and that it is not modelled.
void check_refused(const std::string& key, const std::string& value, const std::string& meaning) {
  const std::string text = llama_with(key, value);
  INFO(key);
  CHECK_THROWS_WITH(parse(text), Contains(at_key(text, key)) && Contains("\"" + key + "\": " + value) &&
                                     Contains(meaning) && Contains("does not model yet"));
}

}  // namespace

TEST_CASE(
    "tpsim models llama, mistral, qwen2, qwen3, qwen2_moe, qwen3_moe, mixtral, qwen3_next, deepseek_v2, "
    "deepseek_v3, gpt2, gpt_bigcode, gpt_neox, starcoder2, falcon, phi, gemma2 and gemma3_text, and every model "
    "preset is one of them") {
  const std::vector<std::string> modelled = {"llama",     "mistral",     "qwen2",      "qwen3",       "qwen2_moe",
                                             "qwen3_moe", "mixtral",     "qwen3_next", "deepseek_v2", "deepseek_v3",
                                             "gpt2",      "gpt_bigcode", "gpt_neox",   "starcoder2",  "falcon",
                                             "phi",       "gemma2",      "gemma3_text"};
  CHECK(model::modelled_model_types() == modelled);
  for (const std::string& name : model::preset_names("models")) {
    const model::ArchSpec arch = model::load_model_preset(name);
    INFO(name);
    CHECK(std::find(modelled.begin(), modelled.end(), arch.model_type) != modelled.end());
  }
}

TEST_CASE("the Hub configs of Llama 3.1, Qwen2, Qwen3 and Mistral v0.3 load with their shapes and flags") {
  const model::ArchSpec llama = model::load_hf_config_file(kConfigs + "llama-3.1-8b.json");
  CHECK(llama.head_dim == 4096 / 32);
  CHECK_FALSE(llama.qkv_bias);
  CHECK_FALSE(llama.qk_norm);
  // Qwen2 carries a sliding_window that use_sliding_window: false turns off, and built-in q/k/v biases.
  const model::ArchSpec qwen2 = model::load_hf_config_file(kConfigs + "qwen2-7b.json");
  CHECK(qwen2.kv_heads == 4);
  CHECK(qwen2.qkv_bias);
  const model::ArchSpec qwen3 = model::load_hf_config_file(kConfigs + "qwen3-8b.json");
  CHECK(qwen3.head_dim == 128);
  CHECK(qwen3.qk_norm);
  const model::ArchSpec mistral = model::load_hf_config_file(kConfigs + "mistral-7b-v0.3.json");
  CHECK(mistral.model_type == "mistral");
  CHECK(mistral.vocab == 32768);
}

TEST_CASE("a config.json of an unmodelled model_type is refused at the key with the valid ones") {
  const std::string bloom = llama_with("model_type", "\"bloom\"");
  CHECK_THROWS_WITH(parse(bloom), Contains(at_key(bloom, "model_type")) && Contains("\"bloom\" is not modelled") &&
                                      Contains("valid: llama, mistral, qwen2, qwen3"));
  const std::string number = llama_with("model_type", "5");
  CHECK_THROWS_WITH(parse(number), Contains(at_key(number, "model_type")) && Contains("must be a string, got 5"));
}

TEST_CASE("a config.json without model_type is refused, as transformers refuses it") {
  nlohmann::json config = nlohmann::json::parse(read_text(kConfigs + "llama-3.1-8b.json"));
  config.erase("model_type");
  CHECK_THROWS_WITH(parse(config.dump(2)),
                    Contains("c.json: missing key \"model_type\"") && Contains("llama, mistral, qwen2, qwen3"));
}

TEST_CASE(
    "a sliding window in effect is refused by name where the model_type does not read it: Llama's, and Qwen's from "
    "max_window_layers on, but Mistral v0.1's is read") {
  const std::string llama = llama_with("sliding_window", "4096");
  CHECK_THROWS_WITH(parse(llama), Contains(at_key(llama, "sliding_window")) && Contains("\"sliding_window\": 4096") &&
                                      Contains("sliding-window attention") && Contains("does not model yet"));
  CHECK(model::load_hf_config_file(kConfigs + "mistral-7b-v0.1.json").style.window == 4096);
  // Qwen2 applies the window to layers max_window_layers.. num_hidden_layers - 1 (28 layers).
  CHECK_NOTHROW(parse(edited("qwen2-7b.json", {{"use_sliding_window", "true"}, {"max_window_layers", "28"}})));
  const std::string qwen = edited("qwen2-7b.json", {{"use_sliding_window", "true"}, {"max_window_layers", "20"}});
  CHECK_THROWS_WITH(parse(qwen), Contains(at_key(qwen, "sliding_window")) && Contains("\"sliding_window\": 131072"));
  CHECK_NOTHROW(parse(edited("mistral-7b-v0.1.json", {{"sliding_window", "null"}})));
}

TEST_CASE("hybrid and linear attention keys of a model_type that does not read them are refused by name") {
  for (const char* key : {"linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                          "linear_value_head_dim", "linear_conv_kernel_dim", "full_attention_interval"}) {
    check_refused(key, "16", "qwen3_next reads it");
  }
  check_refused("layer_types", R"(["full_attention","linear_attention"])", "other than full_attention");
  check_refused("layer_types", R"(["sliding_attention","full_attention"])", "other than full_attention");
  CHECK_NOTHROW(parse(llama_with("layer_types", R"(["full_attention","full_attention"])")));
}

TEST_CASE(
    "the Hub config of Qwen3-Next-80B-A3B loads its hybrid stack: full attention every 4th layer, Gated DeltaNet "
    "between, 512 experts with a shared one") {
  const model::ArchSpec arch = model::load_hf_config_file(kConfigs + "qwen3-next-80b-a3b.json");
  CHECK(arch.model_type == "qwen3_next");
  const model::LinearAttentionSpec& l = arch.linear;
  CHECK(l.key_heads == 16);
  CHECK(l.value_heads == 32);
  CHECK(l.key_head_dim == 128);
  CHECK(l.value_head_dim == 128);
  CHECK(l.conv_kernel == 4);
  // Qwen3NextConfig: layer i is full attention when (i + 1) % full_attention_interval == 0.
  REQUIRE(l.linear_layers.size() == 48);
  for (int64_t i = 0; i < 48; ++i) CHECK(l.is_linear(i) == ((i + 1) % 4 != 0));
  CHECK(l.linear_count({0, 48}) == 36);
  CHECK(l.state_bytes == 2.0);  // vLLM's default: the model's dtype
  CHECK(arch.attention_output_gate);
  CHECK(arch.rotary_fraction == 0.25);
  CHECK(arch.moe.experts == 512);
  CHECK(arch.moe.experts_per_token == 10);
  CHECK(arch.moe.shared_expert_ffn == 512);
}

TEST_CASE("a qwen3_next config's layer_types override the interval, and a bad kind or length is refused at the key") {
  const auto with = [](const std::string& key, const std::string& value) {
    return edited("qwen3-next-80b-a3b.json", {{key, value}});
  };
  std::string kinds = "[";
  for (int i = 0; i < 48; ++i)
    kinds += std::string(i ? "," : "") + (i % 2 ? "\"full_attention\"" : "\"linear_attention\"");
  const model::ArchSpec alternate = parse(with("layer_types", kinds + "]"));
  CHECK(alternate.linear.linear_count({0, 48}) == 24);
  CHECK(alternate.linear.is_linear(0));
  CHECK_FALSE(alternate.linear.is_linear(1));
  const std::string short_list = with("layer_types", R"(["linear_attention"])");
  CHECK_THROWS_WITH(parse(short_list),
                    Contains(at_key(short_list, "layer_types")) && Contains("each of the 48 layers"));
  std::string bad = kinds;
  bad.replace(1, std::string("\"linear_attention\"").size(), "\"sliding_attention\"");
  const std::string wrong = with("layer_types", bad + "]");
  CHECK_THROWS_WITH(parse(wrong), Contains("layer_types[0] is \"sliding_attention\"") &&
                                      Contains("valid: linear_attention, full_attention"));
  const std::string fp32 = with("mamba_ssm_dtype", R"("float32")");
  CHECK(parse(fp32).linear.state_bytes == 4.0);
  const std::string odd = with("linear_num_value_heads", "24");
  CHECK_THROWS_WITH(parse(odd), Contains("must be a multiple of linear_num_key_heads"));
}

TEST_CASE("the Hub config of Qwen3-30B-A3B loads its experts: 128, 8 per token, 768 wide") {
  const model::ArchSpec arch = model::load_hf_config_file(kConfigs + "qwen3-30b-a3b.json");
  CHECK(arch.model_type == "qwen3_moe");
  CHECK(arch.moe.experts == 128);
  CHECK(arch.moe.experts_per_token == 8);
  CHECK(arch.moe.expert_ffn == 768);
  CHECK(arch.qk_norm);
}

TEST_CASE("MoE keys a model_type does not read are refused by name, and 0 or null means no experts") {
  for (const char* key :
       {"num_experts", "num_local_experts", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
        "n_shared_experts", "shared_expert_intermediate_size", "decoder_sparse_step", "first_k_dense_replace"}) {
    check_refused(key, "8", "MoE");
    CHECK_NOTHROW(parse(llama_with(key, "0")));
    CHECK_NOTHROW(parse(llama_with(key, "null")));
  }
}

namespace {

// A Hub config with one key's value replaced.
std::string config_with(const std::string& file, const std::string& key, const std::string& value) {
  const std::string config = read_text(kConfigs + file);
  const std::string quoted = "\"" + key + "\": ";
  const size_t at = config.find(quoted);
  REQUIRE(at != std::string::npos);
  const size_t end = config.find_first_of(",\n", at + quoted.size());
  return config.substr(0, at + quoted.size()) + value + config.substr(end);
}

std::string qwen3_moe_with(const std::string& key, const std::string& value) {
  return config_with("qwen3-30b-a3b.json", key, value);
}

}  // namespace

TEST_CASE("a qwen3_moe config places dense layers where decoder_sparse_step and mlp_only_layers say") {
  const model::ArchSpec every = parse(qwen3_moe_with("decoder_sparse_step", "1"));
  CHECK(every.moe.dense_layers.empty());
  CHECK(every.moe.moe_count({0, 48}) == 48);
  // Qwen2MoeDecoderLayer: an MoE where (i + 1) % decoder_sparse_step == 0 and mlp_only_layers does not list i.
  const model::ArchSpec every_other = parse(qwen3_moe_with("decoder_sparse_step", "2"));
  CHECK_FALSE(every_other.moe.is_moe(0));
  CHECK(every_other.moe.is_moe(1));
  CHECK(every_other.moe.moe_count({0, 48}) == 24);
  CHECK(every_other.has_dense_ffn());
  const model::ArchSpec dense_first = parse(qwen3_moe_with("mlp_only_layers", "[0, 5]"));
  CHECK(dense_first.moe.moe_count({0, 48}) == 46);
  CHECK_FALSE(dense_first.moe.is_moe(5));
  CHECK(dense_first.kind(5) == model::LayerKind{false, false});
  CHECK(dense_first.kind(6) == model::LayerKind{false, true});
}

TEST_CASE("dense-layer keys that name no layer, or leave no MoE, are refused at the key with what is valid") {
  const std::string past_end = qwen3_moe_with("mlp_only_layers", "[48]");
  CHECK_THROWS_WITH(parse(past_end),
                    Contains(at_key(past_end, "mlp_only_layers")) && Contains("lists layer 48; valid: 0 to 47"));
  const std::string not_numbers = qwen3_moe_with("mlp_only_layers", "[\"first\"]");
  CHECK_THROWS_WITH(parse(not_numbers), Contains("mlp_only_layers must be a list of layer numbers"));
  const std::string too_sparse = qwen3_moe_with("decoder_sparse_step", "49");
  CHECK_THROWS_WITH(parse(too_sparse), Contains(at_key(too_sparse, "decoder_sparse_step")) &&
                                           Contains("leaves none of the 48 layers an MoE"));
  CHECK_THROWS_WITH(parse(qwen3_moe_with("decoder_sparse_step", "0")),
                    Contains("decoder_sparse_step must be a positive integer"));
  const std::string shared = qwen3_moe_with("decoder_sparse_step", "1, \"shared_expert_intermediate_size\": 512");
  CHECK_THROWS_WITH(parse(shared), Contains("shared expert") && Contains("qwen2_moe and qwen3_next read it"));
}

TEST_CASE("a qwen3_moe config without its expert keys, or routing each token to more experts than it has, is refused") {
  const std::string config = read_text(kConfigs + "qwen3-30b-a3b.json");
  std::string missing = config;
  const size_t at = missing.find("\"num_experts_per_tok\"");
  REQUIRE(at != std::string::npos);
  missing.replace(at, std::string("\"num_experts_per_tok\"").size(), "\"unused_key\"");
  CHECK_THROWS_WITH(parse(missing), Contains("missing required key \"num_experts_per_tok\"") &&
                                        Contains("model_type qwen3_moe needs num_experts, num_experts_per_tok and "
                                                 "moe_intermediate_size"));
  std::string too_many = config;
  const size_t k = too_many.find("\"num_experts_per_tok\": 8");
  REQUIRE(k != std::string::npos);
  too_many.replace(k, std::string("\"num_experts_per_tok\": 8").size(), "\"num_experts_per_tok\": 129");
  CHECK_THROWS_WITH(parse(too_many), Contains("num_experts_per_tok (129) must be at most num_experts (128)"));
}

TEST_CASE("multi-head latent attention and group-limited router keys are refused by name outside the deepseek types") {
  for (const char* key : {"q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"}) {
    check_refused(key, "64", "multi-head latent attention");
  }
  check_refused("n_group", "8", "group-limited MoE router");
  CHECK_NOTHROW(parse(llama_with("n_group", "1")));
  CHECK_NOTHROW(parse(llama_with("q_lora_rank", "null")));  // DeepSeek-V2-Lite's: no query compression
}

TEST_CASE("the Hub configs of DeepSeek-V2-Lite and DeepSeek-V3 load MLA, dense first layers and the shared experts") {
  const model::ArchSpec lite = model::load_hf_config_file(kConfigs + "deepseek-v2-lite.json");
  CHECK(lite.model_type == "deepseek_v2");
  CHECK(lite.latent.enabled());
  CHECK(lite.latent.q_lora_rank == 0);  // null: queries straight from the hidden state
  CHECK(lite.latent.kv_lora_rank == 512);
  CHECK(lite.latent.qk_head_dim() == 128 + 64);
  CHECK(lite.latent.cache_width() == 512 + 64);
  CHECK(lite.moe.experts == 64);
  CHECK(lite.moe.experts_per_token == 6);
  CHECK(lite.moe.shared_expert_ffn == 2 * 1408);  // n_shared_experts x moe_intermediate_size
  CHECK_FALSE(lite.moe.shared_expert_gated);
  CHECK_FALSE(lite.moe.is_moe(0));  // first_k_dense_replace 1
  CHECK(lite.moe.moe_count({0, 27}) == 26);
  CHECK_FALSE(lite.moe.group_limited());
  const model::ArchSpec v3 = model::load_model_preset("deepseek-v3");
  CHECK(v3.latent.q_lora_rank == 1536);
  CHECK(v3.moe.moe_count({0, 61}) == 58);  // the first three layers dense
  CHECK(v3.moe.shared_expert_ffn == 2048);
  CHECK(v3.moe.groups == 8);
  CHECK(v3.moe.group_limit == 4);
  CHECK(v3.moe.group_limited());
}

TEST_CASE("deepseek configs without an MLA key, or with a router whose groups cannot hold k experts, are refused") {
  const auto with = [](const std::string& key, const std::string& value) {
    return config_with("deepseek-v2-lite.json", key, value);
  };
  CHECK_THROWS_WITH(parse(with("kv_lora_rank", "null")),
                    Contains("missing required key \"kv_lora_rank\"") && Contains("multi-head latent attention"));
  const std::string uneven = with("n_group", "5");
  CHECK_THROWS_WITH(parse(uneven),
                    Contains(at_key(uneven, "n_group")) && Contains("must divide n_routed_experts (64)"));
  const std::string narrow = with("n_group", "32");  // topk_group 1: one group of 2 experts for 6 picks
  CHECK_THROWS_WITH(parse(narrow), Contains(at_key(narrow, "topk_group")) &&
                                       Contains("groups of 2 experts hold fewer than the 6 experts"));
  const std::string all_dense = with("first_k_dense_replace", "27");
  CHECK_THROWS_WITH(parse(all_dense),
                    Contains(at_key(all_dense, "first_k_dense_replace")) && Contains("leaves none of the 27 layers"));
}

TEST_CASE("o_proj and MLP biases are refused, and false biases or tied embeddings are accepted") {
  check_refused("attention_bias", "true", "q/k/v/o projections");
  check_refused("mlp_bias", "true", "gate/up/down projections");
  CHECK_NOTHROW(parse(llama_with("attention_bias", "false")));
  // Tied embeddings share the embedding and LM-head weights; no TP layer changes.
  CHECK(parse(llama_with("tie_word_embeddings", "true")).hidden == 4096);
}

TEST_CASE("a mistyped known key is refused at its location with the type it needs") {
  struct Case {
    const char* key;
    const char* value;
    const char* needs;
  };
  for (const Case& c : {Case{"rms_norm_eps", R"("x")", "rms_norm_eps must be a positive number"},
                        Case{"rope_theta", "-1", "rope_theta must be a positive number"},
                        Case{"tie_word_embeddings", R"("yes")", "tie_word_embeddings must be true or false"},
                        Case{"use_sliding_window", "1", "use_sliding_window must be true or false"},
                        Case{"sliding_window", R"("4k")", "sliding_window must be a positive integer"},
                        Case{"max_window_layers", "-2", "max_window_layers must be an integer >= 0"},
                        Case{"max_position_embeddings", "0", "max_position_embeddings must be a positive integer"},
                        Case{"hidden_act", "5", "hidden_act must be a string"},
                        Case{"rope_scaling", "3", "rope_scaling must be an object"},
                        Case{"layer_types", R"("full_attention")", "layer_types must be a list of strings"},
                        Case{"hidden_size", "4096.0", "hidden_size must be a positive integer"},
                        Case{"num_key_value_heads", R"("8")", "num_key_value_heads must be a positive integer"}}) {
    const std::string text = llama_with(c.key, c.value);
    INFO(c.key);
    CHECK_THROWS_WITH(parse(text), Contains(at_key(text, c.key)) && Contains(c.needs));
  }
}

TEST_CASE("shape values are range-checked before narrowing: huge, wrapped and negative values name the limit") {
  const int64_t layer_limit = 1024;  // docs/scenarios.md
  CHECK(parse(llama_with("num_hidden_layers", std::to_string(layer_limit))).layers == layer_limit);
  const std::string deep = llama_with("num_hidden_layers", std::to_string(layer_limit + 1));
  CHECK_THROWS_WITH(parse(deep), Contains(at_key(deep, "num_hidden_layers")) &&
                                     Contains("num_hidden_layers is 1025, above tpsim's limit of 1024"));
  // 2^64 - 1 and 2^63 would wrap to -1 and INT64_MIN in an int64; both are refused as too large.
  const std::string hidden_limit = std::to_string(int64_t{1} << 17);
  for (const char* huge : {"18446744073709551615", "9223372036854775808"}) {
    CHECK_THROWS_WITH(parse(llama_with("hidden_size", huge)), Contains("above tpsim's limit of " + hidden_limit));
  }
  CHECK_THROWS_WITH(parse(llama_with("vocab_size", "-4")), Contains("vocab_size must be a positive integer, got -4"));
  CHECK_THROWS_WITH(parse(llama_with("head_dim", "1e30")), Contains("head_dim must be a positive integer"));
}

TEST_CASE("docs/scenarios.md names every modelled model_type and every refused key") {
  const std::string docs = read_text(std::string(TPSIM_SOURCE_DIR) + "/docs/scenarios.md");
  for (const std::string& type : model::modelled_model_types()) CHECK_THAT(docs, Contains("`" + type + "`"));
  for (const std::string& key : model::unmodelled_keys()) CHECK_THAT(docs, Contains("`" + key + "`"));
}

TEST_CASE("a config.json that gives a key twice in one object is refused at the second, nested ones too") {
  const std::string twice = "{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 4096,\n  \"hidden_size\": 8192\n}";
  CHECK_THROWS_WITH(model::parse_hf_config(twice, "c.json", "m"),
                    Contains("c.json:4:3:") && Contains("key \"hidden_size\" is given twice"));
  // The same key in two objects is no repetition; inside one nested object it is.
  const std::string nested = "{\"rope_scaling\": {\"factor\": 8.0},\n \"x\": {\"factor\": 1, \"factor\": 2}}";
  CHECK_THROWS_WITH(model::parse_hf_config(nested, "c.json", "m"),
                    Contains("c.json:2:21:") && Contains("key \"factor\" is given twice"));
}
