// GPT-style and sliding-window model_types: key aliases, defaults and the layer style they imply.
#include "input/model/model_style_reader.hpp"

#include <algorithm>

namespace tpsim::model {
namespace {

using Aliases = std::map<std::string, std::string>;

// GPT2Config's and GPTBigCodeConfig's attribute_map (configuration_gpt2.py, configuration_gpt_bigcode.py); n_inner
// is their FFN width (null: 4 x n_embd).
const Aliases kGpt2Aliases = {{"hidden_size", "n_embd"},
                              {"num_hidden_layers", "n_layer"},
                              {"num_attention_heads", "n_head"},
                              {"intermediate_size", "n_inner"},
                              {"max_position_embeddings", "n_positions"}};
// FalconConfig's attribute_map and older key names (configuration_falcon.py: n_head, n_layer; falcon-40b's
// config.json writes n_head_kv); ffn_hidden_size is its FFN width (null: 4 x hidden_size).
const Aliases kFalconAliases = {{"num_hidden_layers", "n_layer"},
                                {"num_attention_heads", "n_head"},
                                {"num_key_value_heads", "num_kv_heads"},
                                {"intermediate_size", "ffn_hidden_size"}};
const Aliases kNoAliases = {};

bool is_one_of(const std::string& type, std::initializer_list<const char*> names) {
  return std::any_of(names.begin(), names.end(), [&](const char* name) { return type == name; });
}

bool flag_or(const ArchSource& source, const std::string& key, bool fallback) {
  if (!source.has(key)) return fallback;
  const std::optional<bool> value = source.flag(key);
  if (!value) source.fail(key, key + " must be true or false, got " + source.shown(key));
  return *value;
}

double fraction_or(const ArchSource& source, const std::string& key, double fallback) {
  if (!source.has(key)) return fallback;
  const std::optional<double> value = source.number(key);
  if (!value || *value < 0.0 || *value > 1.0) {
    source.fail(key, key + " must be a number from 0 to 1, got " + source.shown(key));
  }
  return *value;
}

[[noreturn]] void refuse(const ArchSource& source, const std::string& key, const std::string& what) {
  source.fail(key, source.text("model_type").value_or("this model") + " with " + key + " " + source.shown(key) + ": " +
                       what + ", which tpsim does not model yet (docs/model.md, \"Model types\")");
}

// The window of sliding_window (absent or null: none).
int64_t window_of(const ArchSource& source) {
  return source.has("sliding_window") ? read_positive_int(source, "sliding_window", int64_t{1} << 24) : 0;
}

// Gemma 2/3's layer kinds: layer_types when given ("sliding_attention" or "full_attention" per layer), else a
// full-attention layer every `period`-th layer (Gemma2Config: every 2nd, from layer 1; Gemma3TextConfig:
// sliding_window_pattern, default 6).
std::vector<bool> window_layers(const ArchSource& source, int64_t layers, int64_t period) {
  std::vector<bool> windowed(static_cast<size_t>(layers));
  if (source.has("layer_types")) {
    const std::optional<std::vector<std::string>> kinds = source.text_list("layer_types");
    if (!kinds || static_cast<int64_t>(kinds->size()) != layers) {
      source.fail("layer_types", "layer_types must list \"sliding_attention\" or \"full_attention\" for each of the " +
                                     std::to_string(layers) + " layers, got " + source.shown("layer_types"));
    }
    for (size_t i = 0; i < kinds->size(); ++i) {
      const std::string& kind = (*kinds)[i];
      if (kind != "sliding_attention" && kind != "full_attention") {
        source.fail("layer_types", "layer_types[" + std::to_string(i) + "] is \"" + kind +
                                       "\"; valid: sliding_attention, full_attention");
      }
      windowed[i] = kind == "sliding_attention";
    }
    return windowed;
  }
  for (int64_t i = 0; i < layers; ++i) windowed[static_cast<size_t>(i)] = (i + 1) % period != 0;
  return windowed;
}

// GPT-2 and GPT-BigCode (modeling_gpt2.py, modeling_gpt_bigcode.py): ln_1 / ln_2 LayerNorms, c_attn and c_proj
// with biases, an MLP of c_fc, GeLU and c_proj with biases, learned positions wpe of n_positions rows, tied lm_head.
// GPT-BigCode's multi_query (default true) keeps one K and V head.
void read_gpt2(const ArchSource& source, ArchSpec& arch) {
  arch.style.norm = NormKind::kLayer;
  arch.style.mlp = MlpKind::kPlain;
  arch.style.linear_bias = true;
  arch.rotary_fraction = 0.0;
  arch.style.learned_positions = read_positive_int(source, "max_position_embeddings", kMaxPositions);
  if (arch.model_type == "gpt_bigcode" && flag_or(source, "multi_query", true)) arch.kv_heads = 1;
}

// GPT-NeoX (configuration_gpt_neox.py, modeling_gpt_neox.py): LayerNorms, query_key_value and dense with biases
// (attention_bias, default true), dense_h_to_4h / dense_4h_to_h with biases, rotary over rotary_pct of each head
// (default 0.25), and use_parallel_residual (default true): x + attn(ln1(x)) + mlp(ln2(x)), two norms.
void read_gpt_neox(const ArchSource& source, ArchSpec& arch) {
  arch.style.norm = NormKind::kLayer;
  arch.style.mlp = MlpKind::kPlain;
  arch.style.linear_bias = true;
  if (!flag_or(source, "attention_bias", true)) {
    refuse(source, "attention_bias", "an MLP with biases beside attention without them");
  }
  arch.rotary_fraction = fraction_or(source, "rotary_pct", fraction_or(source, "partial_rotary_factor", 0.25));
  arch.style.parallel_residual = flag_or(source, "use_parallel_residual", true);
}

// StarCoder2 (configuration_starcoder2.py, modeling_starcoder2.py): LayerNorms, q/k/v/o and c_fc / c_proj with
// biases (use_bias, default true), a plain GeLU MLP, full rotary, and sliding_window (null: none).
void read_starcoder2(const ArchSource& source, ArchSpec& arch) {
  arch.style.norm = NormKind::kLayer;
  arch.style.mlp = MlpKind::kPlain;
  arch.style.linear_bias = flag_or(source, "use_bias", true);
  arch.style.window = window_of(source);
}

// Falcon (configuration_falcon.py, modeling_falcon.py): LayerNorms, a plain GeLU MLP, biases where `bias` says
// (default false), rotary unless alibi. K/V heads: num_kv_heads under new_decoder_architecture or without
// multi_query (default true), else one. new_decoder_architecture: parallel attention and MLP with
// num_ln_in_parallel_attn norms (default 2: ln_attn, ln_mlp); else parallel_attn (default true) with one
// input_layernorm, or the sequential layer's two.
void read_falcon(const ArchSource& source, ArchSpec& arch) {
  arch.style.norm = NormKind::kLayer;
  arch.style.mlp = MlpKind::kPlain;
  arch.style.linear_bias = flag_or(source, "bias", false);
  if (flag_or(source, "alibi", false)) refuse(source, "alibi", "ALiBi position biases (instead of rotary)");
  const bool new_architecture = flag_or(source, "new_decoder_architecture", false);
  if (!new_architecture && flag_or(source, "multi_query", true)) arch.kv_heads = 1;
  if (new_architecture) {
    arch.style.parallel_residual = true;
    const int64_t norms =
        source.has("num_ln_in_parallel_attn") ? read_positive_int(source, "num_ln_in_parallel_attn", 2) : 2;
    arch.style.norms_per_layer = static_cast<int>(norms);
  } else if (flag_or(source, "parallel_attn", true)) {
    arch.style.parallel_residual = true;
    arch.style.norms_per_layer = 1;
  }
}

// Phi (configuration_phi.py, modeling_phi.py): one input_layernorm shared by attention and MLP in parallel,
// q/k/v and dense with biases, fc1 / fc2 with biases, rotary over partial_rotary_factor (default 0.5), and an
// lm_head with a bias.
void read_phi(const ArchSource& source, ArchSpec& arch) {
  arch.style.norm = NormKind::kLayer;
  arch.style.mlp = MlpKind::kPlain;
  arch.style.linear_bias = true;
  arch.style.lm_head_bias = true;
  arch.style.parallel_residual = true;
  arch.style.norms_per_layer = 1;
  arch.rotary_fraction = fraction_or(source, "partial_rotary_factor", 0.5);
  if (flag_or(source, "qk_layernorm", false)) refuse(source, "qk_layernorm", "LayerNorms on the q and k heads");
}

// Gemma 2 and Gemma 3 (configuration_gemma2.py, configuration_gemma3.py; modeling_*): GeGLU, four RMSNorms per
// layer (before and after attention and MLP), tied embeddings, sliding_window (default 4096) in the layers
// layer_types names sliding_attention. Gemma 2 soft-caps its attention logits (attn_logit_softcapping, default
// 50); Gemma 3 norms q and k instead.
void read_gemma(const ArchSource& source, ArchSpec& arch) {
  const bool gemma3 = arch.model_type == "gemma3_text";
  arch.style.norms_per_layer = 4;
  arch.style.window = source.has("sliding_window") ? window_of(source) : 4096;
  const int64_t period =
      gemma3 ? (source.has("sliding_window_pattern") ? read_positive_int(source, "sliding_window_pattern", 1 << 12) : 6)
             : 2;
  arch.style.window_layers = window_layers(source, arch.layers, period);
  arch.qk_norm = gemma3;
  if (!gemma3) {
    arch.style.attention_softcap = 50.0;
    if (source.has("attn_logit_softcapping")) {
      const std::optional<double> cap = source.number("attn_logit_softcapping");
      arch.style.attention_softcap = cap.value_or(0.0);
    }
  }
}

}  // namespace

std::string AliasedSource::name(const std::string& key) const {
  if (inner_.has(key)) return key;
  const auto alias = aliases_.find(key);
  return alias == aliases_.end() ? key : alias->second;
}

const Aliases& key_aliases(const std::string& type) {
  if (type == "gpt2" || type == "gpt_bigcode") return kGpt2Aliases;
  if (type == "falcon") return kFalconAliases;
  return kNoAliases;
}

bool default_ffn_is_4h(const std::string& type) {
  return is_one_of(type, {"gpt2", "gpt_bigcode", "falcon"});
}

bool ties_by_default(const std::string& type) {
  // GPT2Config, GPTBigCodeConfig and FalconConfig keep PretrainedConfig's default (true); Starcoder2Config,
  // Gemma2Config and Gemma3TextConfig set it true; GPTNeoXConfig and PhiConfig false, as Llama's.
  return is_one_of(type, {"gpt2", "gpt_bigcode", "falcon", "starcoder2", "gemma2", "gemma3_text"});
}

bool style_reads(const std::string& type, const std::string& key) {
  if (key == "sliding_window") return is_one_of(type, {"mistral", "starcoder2", "gemma2", "gemma3_text"});
  if (key == "layer_types") return is_one_of(type, {"gemma2", "gemma3_text"});
  if (key == "attention_bias") return type == "gpt_neox";
  return false;
}

void read_model_style(const ArchSource& source, ArchSpec& arch) {
  const std::string& type = arch.model_type;
  if (type == "gpt2" || type == "gpt_bigcode") read_gpt2(source, arch);
  if (type == "gpt_neox") read_gpt_neox(source, arch);
  if (type == "starcoder2") read_starcoder2(source, arch);
  if (type == "falcon") read_falcon(source, arch);
  if (type == "phi") read_phi(source, arch);
  if (type == "gemma2" || type == "gemma3_text") read_gemma(source, arch);
  // MistralConfig's sliding_window (default 4096 in older transformers, null since; Mistral-7B-v0.1's config.json
  // gives 4096): every layer attends through it (modeling_mistral.py).
  if (type == "mistral") arch.style.window = window_of(source);
}

}  // namespace tpsim::model
