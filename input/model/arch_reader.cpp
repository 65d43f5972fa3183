// The model_type allow-list, shape limits and shape rules shared by config.json files and inline models.
#include "input/model/arch_reader.hpp"

#include <algorithm>

#include "base/limits.hpp"
#include "input/model/model_style_reader.hpp"
#include "input/presets.hpp"

namespace tpsim::model {
namespace {

// What a model_type adds to the plain Llama layer (pre-norm, GQA, RoPE, SwiGLU, no biases).
struct ModelType {
  const char* name;
  bool qk_norm;   // RMSNorm on the q and k heads before RoPE
  bool qkv_bias;  // biases on q/k/v, built into the model type (its config has no key for them)
  // MoE types: the keys of the expert count and of one expert's FFN width (null: a dense FFN), and of the
  // shared expert's width (null: none).
  const char* experts_key;
  const char* expert_ffn_key;
  const char* shared_expert_key;
  // qwen3_next: linear-attention layers between full-attention ones, whose q_proj writes an output gate and
  // whose RoPE turns part of each head.
  bool hybrid;
  // Dense FFNs between the MoE ones where decoder_sparse_step and mlp_only_layers say (Qwen2-MoE's family).
  bool sparse_layers;
  // DeepSeek-V2/V3: multi-head latent attention, n_shared_experts ungated shared experts of the routed width,
  // dense first layers (first_k_dense_replace, moe_layer_freq) and the group-limited router (n_group, topk_group).
  bool deepseek = false;
};

constexpr ModelType kModelTypes[] = {
    {"llama", false, false, nullptr, nullptr, nullptr, false, false},
    {"mistral", false, false, nullptr, nullptr, nullptr, false, false},
    {"qwen2", false, true, nullptr, nullptr, nullptr, false, false},
    {"qwen3", true, false, nullptr, nullptr, nullptr, false, false},
    {"qwen2_moe", false, true, "num_experts", "moe_intermediate_size", "shared_expert_intermediate_size", false, true},
    {"qwen3_moe", true, false, "num_experts", "moe_intermediate_size", nullptr, false, true},
    {"mixtral", false, false, "num_local_experts", "intermediate_size", nullptr, false, false},
    {"qwen3_next", true, false, "num_experts", "moe_intermediate_size", "shared_expert_intermediate_size", true, true},
    {"deepseek_v2", false, false, "n_routed_experts", "moe_intermediate_size", nullptr, false, false, true},
    {"deepseek_v3", false, false, "n_routed_experts", "moe_intermediate_size", nullptr, false, false, true},
    // GPT-style and windowed layers: their norms, FFN, biases, residual wiring, positions and window are
    // model_style_reader.cpp's.
    {"gpt2", false, false, nullptr, nullptr, nullptr, false, false},
    {"gpt_bigcode", false, false, nullptr, nullptr, nullptr, false, false},
    {"gpt_neox", false, false, nullptr, nullptr, nullptr, false, false},
    {"starcoder2", false, false, nullptr, nullptr, nullptr, false, false},
    {"falcon", false, false, nullptr, nullptr, nullptr, false, false},
    {"phi", false, false, nullptr, nullptr, nullptr, false, false},
    {"gemma2", false, false, nullptr, nullptr, nullptr, false, false},
    {"gemma3_text", false, false, nullptr, nullptr, nullptr, false, false},
};

struct ShapeKey {
  const char* key;
  int64_t limit;
};

// Far above any published decoder (Llama-3.1-405B: hidden 16384, FFN 53248, 128 heads, 126 layers;
// Gemma 3: 262144 tokens of vocabulary); they stop a typo or a wrapped integer before the layer graph.
constexpr ShapeKey kHidden{"hidden_size", int64_t{1} << 17};
constexpr ShapeKey kIntermediate{"intermediate_size", int64_t{1} << 20};
constexpr ShapeKey kHeads{"num_attention_heads", int64_t{1} << 12};
constexpr ShapeKey kKvHeads{"num_key_value_heads", int64_t{1} << 12};
constexpr ShapeKey kHeadDim{"head_dim", int64_t{1} << 10};
constexpr ShapeKey kLayers{"num_hidden_layers", kMaxLayers};
constexpr ShapeKey kVocab{"vocab_size", int64_t{1} << 22};
// DeepSeek-V3 routes among 256 experts, Qwen3-Next among 512, each token to 8 or 10.
constexpr int64_t kMaxExperts = int64_t{1} << 12;
constexpr ShapeKey kExpertsPerToken{"num_experts_per_tok", kMaxExperts};
// DeepSeek-V2 and V3 route within 8 groups; 256 bounds the group-limited router's exact miss probabilities.
constexpr int64_t kMaxRouterGroups = 256;

const char* const kRequired = "hidden_size, intermediate_size, num_attention_heads, num_hidden_layers, vocab_size";

int64_t positive_int(const ArchSource& source, const ShapeKey& shape) {
  const std::string key = shape.key;
  if (!source.has(key)) source.fail(key, "missing required key \"" + key + "\"; a model needs " + kRequired);
  const std::optional<int64_t> value = source.integer(key);
  if (!value || *value <= 0) source.fail(key, key + " must be a positive integer, got " + source.shown(key));
  if (*value > shape.limit) {
    source.fail(key, key + " is " + std::to_string(*value) + ", above tpsim's limit of " + std::to_string(shape.limit) +
                         " (limits: docs/scenarios.md)");
  }
  return *value;
}

int64_t positive_int_or(const ArchSource& source, const ShapeKey& shape, int64_t fallback) {
  return source.has(shape.key) ? positive_int(source, shape) : fallback;
}

int64_t non_negative_int(const ArchSource& source, const ShapeKey& shape) {
  const std::string key = shape.key;
  const std::optional<int64_t> value = source.integer(key);
  if (!value || *value < 0 || *value > shape.limit) {
    source.fail(key,
                key + " must be an integer from 0 to " + std::to_string(shape.limit) + ", got " + source.shown(key));
  }
  return *value;
}

// The MoE keys of an MoE model_type: the expert count, the experts per token (at most the count) and one
// expert's width.
MoeSpec read_moe(const ArchSource& source, const ModelType& type) {
  for (const char* key : {type.experts_key, kExpertsPerToken.key, type.expert_ffn_key}) {
    if (!source.has(key)) {
      source.fail(key, std::string("missing required key \"") + key + "\"; model_type " + type.name + " needs " +
                           type.experts_key + ", " + kExpertsPerToken.key + " and " + type.expert_ffn_key);
    }
  }
  MoeSpec moe;
  moe.experts = positive_int(source, ShapeKey{type.experts_key, kMaxExperts});
  moe.experts_per_token = positive_int(source, kExpertsPerToken);
  if (moe.experts_per_token > moe.experts) {
    source.fail(kExpertsPerToken.key, std::string(kExpertsPerToken.key) + " (" + std::to_string(moe.experts_per_token) +
                                          ") must be at most " + type.experts_key + " (" + std::to_string(moe.experts) +
                                          ")");
  }
  moe.expert_ffn = positive_int(source, ShapeKey{type.expert_ffn_key, kIntermediate.limit});
  // Absent or 0: no shared expert (Qwen2MoeConfig's default is 5632 for Qwen1.5-MoE; its configs all give it).
  if (type.shared_expert_key != nullptr && source.has(type.shared_expert_key)) {
    const std::optional<int64_t> width = source.integer(type.shared_expert_key);
    if (!width || *width < 0) {
      source.fail(type.shared_expert_key, std::string(type.shared_expert_key) + " must be an integer >= 0, got " +
                                              source.shown(type.shared_expert_key));
    }
    if (*width > 0) moe.shared_expert_ffn = positive_int(source, ShapeKey{type.shared_expert_key, kIntermediate.limit});
  }
  return moe;
}

// The dense layers of a Qwen2-MoE-family stack, placed as Qwen2MoeDecoderLayer (and Qwen3-MoE's and
// Qwen3-Next's) places them: layer i runs the dense FFN of intermediate_size when mlp_only_layers lists it or
// when i + 1 is not a multiple of decoder_sparse_step (default 1: every layer an MoE). Empty when none is dense.
std::vector<bool> read_dense_layers(const ArchSource& source, int64_t layers) {
  const int64_t step = positive_int_or(source, ShapeKey{"decoder_sparse_step", kLayers.limit}, 1);
  std::vector<bool> dense(static_cast<size_t>(layers));
  for (int64_t layer = 0; layer < layers; ++layer) dense[static_cast<size_t>(layer)] = (layer + 1) % step != 0;
  bool lists_layers = false;
  if (source.has("mlp_only_layers")) {
    const std::optional<std::vector<int64_t>> listed = source.integer_list("mlp_only_layers");
    if (!listed) {
      source.fail("mlp_only_layers",
                  "mlp_only_layers must be a list of layer numbers, got " + source.shown("mlp_only_layers"));
    }
    for (const int64_t layer : *listed) {
      if (layer < 0 || layer >= layers) {
        source.fail("mlp_only_layers", "mlp_only_layers lists layer " + std::to_string(layer) + "; valid: 0 to " +
                                           std::to_string(layers - 1) + " (num_hidden_layers " +
                                           std::to_string(layers) + ")");
      }
      dense[static_cast<size_t>(layer)] = true;
    }
    lists_layers = !listed->empty();
  }
  if (std::find(dense.begin(), dense.end(), false) == dense.end()) {
    const std::string blamed = lists_layers ? "mlp_only_layers" : "decoder_sparse_step";
    source.fail(blamed,
                blamed + " " + source.shown(blamed) + " leaves none of the " + std::to_string(layers) +
                    " layers an MoE; valid: a decoder_sparse_step of at most num_hidden_layers, and some layer that "
                    "mlp_only_layers does not list");
  }
  if (std::find(dense.begin(), dense.end(), true) == dense.end()) return {};
  return dense;
}

// DeepSeek's keys of MLA, all required but q_lora_rank (null or absent: queries straight from the hidden state).
constexpr ShapeKey kLatentKeys[] = {
    {"kv_lora_rank", kIntermediate.limit},
    {"qk_rope_head_dim", kHeadDim.limit},
    {"qk_nope_head_dim", kHeadDim.limit},
    {"v_head_dim", kHeadDim.limit},
};
constexpr ShapeKey kQueryLora{"q_lora_rank", kIntermediate.limit};

LatentAttentionSpec read_latent_attention(const ArchSource& source, const ModelType& type) {
  for (const ShapeKey& key : kLatentKeys) {
    if (!source.has(key.key)) {
      source.fail(key.key, std::string("missing required key \"") + key.key + "\"; model_type " + type.name +
                               " (multi-head latent attention) needs kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim "
                               "and v_head_dim");
    }
  }
  LatentAttentionSpec l;
  l.kv_lora_rank = positive_int(source, kLatentKeys[0]);
  l.rope_head_dim = positive_int(source, kLatentKeys[1]);
  l.nope_head_dim = positive_int(source, kLatentKeys[2]);
  l.value_head_dim = positive_int(source, kLatentKeys[3]);
  l.q_lora_rank = positive_int_or(source, kQueryLora, 0);
  return l;
}

// DeepSeek's MoE extras: n_shared_experts shared experts of the routed width (one SwiGLU of their summed width,
// ungated), dense FFNs in the first first_k_dense_replace layers and, after them, wherever the layer's distance
// from the first MoE layer is not a multiple of moe_layer_freq (DeepseekV3DecoderLayer), and the router's groups.
void read_deepseek_moe(const ArchSource& source, int64_t layers, MoeSpec& moe) {
  const int64_t shared =
      source.has("n_shared_experts") ? non_negative_int(source, ShapeKey{"n_shared_experts", kMaxExperts}) : 0;
  moe.shared_expert_ffn = shared * moe.expert_ffn;
  moe.shared_expert_gated = false;
  const int64_t dense_first = source.has("first_k_dense_replace")
                                  ? non_negative_int(source, ShapeKey{"first_k_dense_replace", kLayers.limit})
                                  : 0;
  const int64_t frequency = positive_int_or(source, ShapeKey{"moe_layer_freq", kLayers.limit}, 1);
  std::vector<bool> dense(static_cast<size_t>(layers));
  bool any_moe = false, any_dense = false;
  for (int64_t layer = 0; layer < layers; ++layer) {
    const bool is_dense = layer < dense_first || (layer - dense_first) % frequency != 0;
    dense[static_cast<size_t>(layer)] = is_dense;
    any_moe = any_moe || !is_dense;
    any_dense = any_dense || is_dense;
  }
  if (!any_moe) {
    source.fail("first_k_dense_replace", "first_k_dense_replace " + std::to_string(dense_first) +
                                             " leaves none of the " + std::to_string(layers) +
                                             " layers an MoE; valid: below num_hidden_layers");
  }
  if (any_dense) moe.dense_layers = std::move(dense);
  moe.groups = positive_int_or(source, ShapeKey{"n_group", kMaxRouterGroups}, 1);
  moe.group_limit = positive_int_or(source, ShapeKey{"topk_group", kMaxExperts}, moe.groups);
  if (moe.experts % moe.groups != 0) {
    source.fail("n_group", "n_group (" + std::to_string(moe.groups) + ") must divide n_routed_experts (" +
                               std::to_string(moe.experts) + ")");
  }
  if (moe.group_limit > moe.groups) {
    source.fail("topk_group", "topk_group (" + std::to_string(moe.group_limit) + ") must be at most n_group (" +
                                  std::to_string(moe.groups) + ")");
  }
  if (moe.group_limit * (moe.experts / moe.groups) < moe.experts_per_token) {
    source.fail("topk_group", "topk_group " + std::to_string(moe.group_limit) + " groups of " +
                                  std::to_string(moe.experts / moe.groups) + " experts hold fewer than the " +
                                  std::to_string(moe.experts_per_token) + " experts each token picks");
  }
}

// qwen3_next's layer kinds: layer_types when given ("linear_attention" or "full_attention" per layer),
// else full attention every full_attention_interval-th layer (default 4), as Qwen3NextConfig derives them.
std::vector<bool> read_linear_layers(const ArchSource& source, int64_t layers) {
  std::vector<bool> linear(static_cast<size_t>(layers));
  if (source.has("layer_types")) {
    const std::optional<std::vector<std::string>> kinds = source.text_list("layer_types");
    if (!kinds || static_cast<int64_t>(kinds->size()) != layers) {
      source.fail("layer_types",
                  "layer_types must list one of \"linear_attention\" or \"full_attention\" for each of "
                  "the " +
                      std::to_string(layers) + " layers, got " + source.shown("layer_types"));
    }
    for (size_t i = 0; i < kinds->size(); ++i) {
      const std::string& kind = (*kinds)[i];
      if (kind != "linear_attention" && kind != "full_attention") {
        source.fail("layer_types", "layer_types[" + std::to_string(i) + "] is \"" + kind +
                                       "\"; valid: linear_attention, full_attention");
      }
      linear[i] = kind == "linear_attention";
    }
    return linear;
  }
  const int64_t interval = positive_int_or(source, ShapeKey{"full_attention_interval", kLayers.limit}, 4);
  for (int64_t i = 0; i < layers; ++i) linear[static_cast<size_t>(i)] = (i + 1) % interval != 0;
  return linear;
}

// A hybrid model_type's linear-attention shape keys, all required.
constexpr ShapeKey kLinearKeys[] = {{"linear_num_key_heads", kHeads.limit},
                                    {"linear_num_value_heads", kHeads.limit},
                                    {"linear_key_head_dim", kHeadDim.limit},
                                    {"linear_value_head_dim", kHeadDim.limit},
                                    // Qwen3-Next's and Mamba's convolutions are 4 taps; 64 stops a typo.
                                    {"linear_conv_kernel_dim", 64}};

// A hybrid model_type's linear-attention shapes (required), layer kinds, state width and attention options.
void read_hybrid(const ArchSource& source, ArchSpec& arch) {
  for (const ShapeKey& key : kLinearKeys) {
    if (!source.has(key.key)) {
      source.fail(key.key, std::string("missing required key \"") + key.key + "\"; model_type " + arch.model_type +
                               " needs linear_num_key_heads, linear_num_value_heads, linear_key_head_dim, "
                               "linear_value_head_dim and linear_conv_kernel_dim");
    }
  }
  LinearAttentionSpec& l = arch.linear;
  l.key_heads = positive_int(source, kLinearKeys[0]);
  l.value_heads = positive_int(source, kLinearKeys[1]);
  l.key_head_dim = positive_int(source, kLinearKeys[2]);
  l.value_head_dim = positive_int(source, kLinearKeys[3]);
  l.conv_kernel = positive_int(source, kLinearKeys[4]);
  if (l.value_heads % l.key_heads != 0) {
    source.fail("linear_num_value_heads", "linear_num_value_heads (" + std::to_string(l.value_heads) +
                                              ") must be a multiple of linear_num_key_heads (" +
                                              std::to_string(l.key_heads) + ")");
  }
  l.linear_layers = read_linear_layers(source, arch.layers);
  if (source.has("mamba_ssm_dtype")) {
    const std::optional<std::string> dtype = source.text("mamba_ssm_dtype");
    if (!dtype || (*dtype != "float32" && *dtype != "bfloat16" && *dtype != "float16")) {
      source.fail("mamba_ssm_dtype", "mamba_ssm_dtype must be \"float32\", \"bfloat16\" or \"float16\", got " +
                                         source.shown("mamba_ssm_dtype"));
    }
    l.state_bytes = *dtype == "float32" ? 4.0 : 2.0;
  }
  // Absent: gated, as vLLM's Qwen3-Next reads it (getattr(config, "attn_output_gate", True)).
  arch.attention_output_gate = true;
  if (source.has("attn_output_gate")) {
    const std::optional<bool> gate = source.flag("attn_output_gate");
    if (!gate)
      source.fail("attn_output_gate",
                  "attn_output_gate must be true or false, got " + source.shown("attn_output_gate"));
    arch.attention_output_gate = *gate;
  }
  // Absent: 0.25, Qwen3NextConfig's default.
  arch.rotary_fraction = 0.25;
  if (source.has("partial_rotary_factor")) {
    const std::optional<double> fraction = source.number("partial_rotary_factor");
    if (!fraction || *fraction <= 0 || *fraction > 1) {
      source.fail("partial_rotary_factor",
                  "partial_rotary_factor must be a number in (0, 1], got " + source.shown("partial_rotary_factor"));
    }
    arch.rotary_fraction = *fraction;
  }
}

const ModelType& model_type(const ArchSource& source, MissingModelType missing) {
  const std::string valid = join_names(modelled_model_types());
  if (!source.has("model_type")) {
    if (missing == MissingModelType::kLlama) return kModelTypes[0];
    source.fail("model_type", "missing key \"model_type\" (transformers needs it too); valid: " + valid);
  }
  const std::optional<std::string> name = source.text("model_type");
  if (!name) source.fail("model_type", "model_type must be a string, got " + source.shown("model_type"));
  const auto* found = std::find_if(std::begin(kModelTypes), std::end(kModelTypes),
                                   [&](const ModelType& type) { return *name == type.name; });
  if (found == std::end(kModelTypes)) {
    source.fail("model_type", "model_type \"" + *name +
                                  "\" is not modelled by tpsim (pre-norm decoders, dense or MoE); valid: " + valid);
  }
  return *found;
}

}  // namespace

int64_t read_positive_int(const ArchSource& source, const std::string& key, int64_t limit) {
  return positive_int(source, ShapeKey{key.c_str(), limit});
}

bool model_type_reads(const std::string& name, const std::string& key) {
  if (style_reads(name, key)) return true;
  const auto* type =
      std::find_if(std::begin(kModelTypes), std::end(kModelTypes), [&](const ModelType& t) { return name == t.name; });
  if (type == std::end(kModelTypes)) return false;
  if (type->experts_key != nullptr) {
    for (const char* moe_key : {type->experts_key, type->expert_ffn_key, kExpertsPerToken.key}) {
      if (key == moe_key) return true;
    }
    if (type->shared_expert_key != nullptr && key == type->shared_expert_key) return true;
  }
  if (type->sparse_layers && (key == "decoder_sparse_step" || key == "mlp_only_layers")) return true;
  if (type->deepseek) {
    for (const char* deepseek_key :
         {"n_shared_experts", "first_k_dense_replace", "moe_layer_freq", "n_group", "topk_group", kQueryLora.key}) {
      if (key == deepseek_key) return true;
    }
    for (const ShapeKey& latent : kLatentKeys) {
      if (key == latent.key) return true;
    }
  }
  if (type->hybrid) {
    if (key == "layer_types" || key == "full_attention_interval") return true;
    for (const ShapeKey& linear : kLinearKeys) {
      if (key == linear.key) return true;
    }
  }
  return false;
}

const std::vector<std::string>& modelled_model_types() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const ModelType& type : kModelTypes) out.emplace_back(type.name);
    return out;
  }();
  return names;
}

ArchSpec read_arch(const ArchSource& config, MissingModelType missing) {
  const ModelType& type = model_type(config, missing);
  const AliasedSource source(config, key_aliases(type.name));
  ArchSpec arch;
  arch.model_type = type.name;
  arch.qk_norm = type.qk_norm;
  arch.qkv_bias = type.qkv_bias;
  arch.hidden = positive_int(source, kHidden);
  arch.intermediate = default_ffn_is_4h(type.name) && !source.has(kIntermediate.key)
                          ? 4 * arch.hidden
                          : positive_int(source, kIntermediate);
  arch.heads = positive_int(source, kHeads);
  arch.layers = positive_int(source, kLayers);
  arch.vocab = positive_int(source, kVocab);
  arch.kv_heads = positive_int_or(source, kKvHeads, arch.heads);
  // Absent: untied, the default of LlamaConfig, Qwen2Config, ...; tied for the GPT-style types whose config class
  // says so (model_style_reader.cpp).
  arch.tied_embeddings = ties_by_default(type.name);
  if (source.has("tie_word_embeddings")) {
    const std::optional<bool> tied = source.flag("tie_word_embeddings");
    if (!tied)
      source.fail("tie_word_embeddings",
                  "tie_word_embeddings must be true or false, got " + source.shown("tie_word_embeddings"));
    arch.tied_embeddings = *tied;
  }
  if (arch.heads % arch.kv_heads != 0) {
    source.fail(kKvHeads.key, "num_key_value_heads (" + std::to_string(arch.kv_heads) +
                                  ") must divide num_attention_heads (" + std::to_string(arch.heads) + ")");
  }
  if (!source.has(kHeadDim.key) && arch.hidden % arch.heads != 0) {
    source.fail(kHeads.key, "num_attention_heads must divide hidden_size when head_dim is not given");
  }
  arch.head_dim = positive_int_or(source, kHeadDim, arch.hidden / arch.heads);
  if (type.experts_key != nullptr) arch.moe = read_moe(source, type);
  if (type.sparse_layers) arch.moe.dense_layers = read_dense_layers(source, arch.layers);
  if (type.deepseek) {
    read_deepseek_moe(source, arch.layers, arch.moe);
    arch.latent = read_latent_attention(source, type);
  }
  if (type.hybrid) read_hybrid(source, arch);
  read_model_style(source, arch);
  return arch;
}

}  // namespace tpsim::model
