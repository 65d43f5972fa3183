// The model_type allow-list, shape limits and shape rules shared by config.json files and inline models.
#include "model/arch_reader.hpp"

#include <algorithm>

#include "model/limits.hpp"
#include "model/presets.hpp"

namespace tpsim::model {
namespace {

// What a model_type adds to the plain Llama layer (pre-norm, GQA, RoPE, SwiGLU, no biases).
struct ModelType {
  const char* name;
  bool qk_norm;   // RMSNorm on the q and k heads before RoPE
  bool qkv_bias;  // biases on q/k/v, built into the model type (its config has no key for them)
  // MoE types: the keys of the expert count and of one expert's FFN width (null: a dense FFN).
  const char* experts_key;
  const char* expert_ffn_key;
};

constexpr ModelType kModelTypes[] = {
    {"llama", false, false, nullptr, nullptr},
    {"mistral", false, false, nullptr, nullptr},
    {"qwen2", false, true, nullptr, nullptr},
    {"qwen3", true, false, nullptr, nullptr},
    {"qwen3_moe", true, false, "num_experts", "moe_intermediate_size"},
    {"mixtral", false, false, "num_local_experts", "intermediate_size"},
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
  return moe;
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

const std::vector<std::string>& modelled_model_types() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const ModelType& type : kModelTypes) out.emplace_back(type.name);
    return out;
  }();
  return names;
}

ArchSpec read_arch(const ArchSource& source, MissingModelType missing) {
  const ModelType& type = model_type(source, missing);
  ArchSpec arch;
  arch.model_type = type.name;
  arch.qk_norm = type.qk_norm;
  arch.qkv_bias = type.qkv_bias;
  arch.hidden = positive_int(source, kHidden);
  arch.intermediate = positive_int(source, kIntermediate);
  arch.heads = positive_int(source, kHeads);
  arch.layers = positive_int(source, kLayers);
  arch.vocab = positive_int(source, kVocab);
  arch.kv_heads = positive_int_or(source, kKvHeads, arch.heads);
  // Absent: untied, the default of every modelled model_type's config class (LlamaConfig, Qwen2Config, ...).
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
  return arch;
}

}  // namespace tpsim::model
