// Type checks of the non-shape config.json keys and the table of refused (unmodelled) features.
#include "input/model/hf_keys.hpp"

#include <algorithm>
#include <cmath>

#include "input/model/arch_reader.hpp"
#include "input/presets.hpp"

namespace tpsim::model {
namespace {

using Json = nlohmann::json;

enum class Kind { kPositiveNumber, kPositiveInt, kNonNegativeInt, kBoolean, kString, kObject, kStringList };

struct KnownKey {
  const char* key;
  Kind kind;
};

// Keys tpsim reads (here or in `tpsim shard`) or judges; null means absent, as in transformers.
constexpr KnownKey kKnownKeys[] = {
    {"rms_norm_eps", Kind::kPositiveNumber},
    {"rope_theta", Kind::kPositiveNumber},
    {"tie_word_embeddings", Kind::kBoolean},
    {"attention_bias", Kind::kBoolean},
    {"mlp_bias", Kind::kBoolean},
    {"use_sliding_window", Kind::kBoolean},
    {"sliding_window", Kind::kPositiveInt},
    {"max_window_layers", Kind::kNonNegativeInt},
    {"max_position_embeddings", Kind::kPositiveInt},
    {"hidden_act", Kind::kString},
    {"rope_scaling", Kind::kObject},
    {"layer_types", Kind::kStringList},
    {"partial_rotary_factor", Kind::kPositiveNumber},
    {"attn_output_gate", Kind::kBoolean},
    {"mamba_ssm_dtype", Kind::kString},
    {"_source", Kind::kString},
};

bool has_kind(const Json& v, Kind kind) {
  switch (kind) {
    case Kind::kPositiveNumber:
      return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() > 0;
    case Kind::kPositiveInt:
      return v.is_number_unsigned() && v.get<uint64_t>() > 0;
    case Kind::kNonNegativeInt:
      return v.is_number_unsigned();
    case Kind::kBoolean:
      return v.is_boolean();
    case Kind::kString:
      return v.is_string();
    case Kind::kObject:
      return v.is_object();
    case Kind::kStringList:
      return v.is_array() && std::all_of(v.begin(), v.end(), [](const Json& item) { return item.is_string(); });
  }
  return false;
}

const char* kind_text(Kind kind) {
  switch (kind) {
    case Kind::kPositiveNumber:
      return "a positive number";
    case Kind::kPositiveInt:
      return "a positive integer";
    case Kind::kNonNegativeInt:
      return "an integer >= 0";
    case Kind::kBoolean:
      return "true or false";
    case Kind::kString:
      return "a string";
    case Kind::kObject:
      return "an object";
    case Kind::kStringList:
      return "a list of strings";
  }
  return "";
}

// Whether a key turns its feature on in this config (its value is known to be non-null).
using InEffect = bool (*)(const Json& config, const Json& value);

// HF writes 0, false or an empty list for "none of it" (num_experts: 0, mlp_only_layers: []).
bool is_set(const Json&, const Json& v) {
  return !(v == 0 || v == false || (v.is_structured() && v.empty()));
}

bool is_true(const Json&, const Json& v) {
  return v == true;
}

// Mistral reads the window alone; Qwen2/3 use it only with use_sliding_window, and only from layer
// max_window_layers on.
bool window_in_effect(const Json& config, const Json&) {
  const Json use = config.value("use_sliding_window", Json());
  if (use.is_null()) return true;
  if (use == false) return false;
  const Json from = config.value("max_window_layers", Json());
  const Json layers = config.value("num_hidden_layers", Json());
  return from.is_null() || !layers.is_number() || from < layers;
}

bool above_one(const Json& config, const Json& v) {
  return is_set(config, v) && v != 1;
}

bool not_all_full_attention(const Json&, const Json& v) {
  return std::any_of(v.begin(), v.end(), [](const Json& kind) { return kind != "full_attention"; });
}

struct UnmodelledKey {
  const char* key;
  const char* meaning;
  InEffect in_effect;
};

constexpr UnmodelledKey kUnmodelled[] = {
    {"sliding_window",
     "sliding-window attention (each token sees the last N tokens; in effect unless "
     "use_sliding_window is false)",
     window_in_effect},
    {"layer_types", "a stack with layers other than full_attention (sliding-window or linear attention)",
     not_all_full_attention},
    {"full_attention_interval",
     "a hybrid stack (full attention every N layers, linear attention between; model_type qwen3_next reads it)",
     is_set},
    {"linear_num_key_heads", "linear-attention key heads of a hybrid stack (model_type qwen3_next reads it)", is_set},
    {"linear_num_value_heads", "linear-attention value heads of a hybrid stack (model_type qwen3_next reads it)",
     is_set},
    {"linear_key_head_dim", "the key head width of linear-attention layers (model_type qwen3_next reads it)", is_set},
    {"linear_value_head_dim", "the value head width of linear-attention layers (model_type qwen3_next reads it)",
     is_set},
    {"linear_conv_kernel_dim", "the causal convolution of linear-attention layers (model_type qwen3_next reads it)",
     is_set},
    {"n_routed_experts",
     "DeepSeek-style MoE (routed experts per layer; model_types deepseek_v2 and deepseek_v3 read it)", is_set},
    {"n_shared_experts",
     "DeepSeek-style MoE (shared experts beside the routed ones; model_types deepseek_v2 and deepseek_v3 read it)",
     is_set},
    {"shared_expert_intermediate_size",
     "MoE (the FFN width of the shared expert; model_types qwen2_moe and qwen3_next read it)", is_set},
    {"num_experts", "MoE (routed experts per layer; model_types qwen2_moe, qwen3_moe and qwen3_next read it)", is_set},
    {"num_local_experts", "MoE (experts per layer; model_type mixtral reads it)", is_set},
    {"moe_intermediate_size",
     "MoE (the FFN width of one expert; model_types qwen2_moe, qwen3_moe and qwen3_next read it)", is_set},
    {"num_experts_per_tok", "MoE (experts each token is routed to; the MoE model_types read it)", is_set},
    {"decoder_sparse_step", "MoE in every N-th layer only (dense FFNs between)", above_one},
    {"mlp_only_layers", "dense FFNs in the listed layers of an MoE stack", is_set},
    {"first_k_dense_replace",
     "MoE (dense first layers, MoE after them; model_types deepseek_v2 and deepseek_v3 read it)", is_set},
    {"n_group", "a group-limited MoE router (model_types deepseek_v2 and deepseek_v3 read it)", above_one},
    {"q_lora_rank", "multi-head latent attention (MLA: a low-rank query projection; the deepseek model_types read it)",
     is_set},
    {"kv_lora_rank",
     "multi-head latent attention (MLA: a compressed latent KV cache; the deepseek model_types read it)", is_set},
    {"qk_rope_head_dim",
     "multi-head latent attention (MLA: the rotary part of each head; the deepseek model_types read it)", is_set},
    {"qk_nope_head_dim",
     "multi-head latent attention (MLA: the non-rotary part of each head; the deepseek model_types read it)", is_set},
    {"v_head_dim",
     "multi-head latent attention (MLA: value heads narrower or wider than q/k; the deepseek model_types read it)",
     is_set},
    {"attention_bias", "biases on the q/k/v/o projections (Qwen2's built-in q/k/v biases are modelled)", is_true},
    {"mlp_bias", "biases on the gate/up/down projections", is_true},
};

// A value short enough for a one-line message.
std::string short_dump(const Json& v) {
  const std::string text = v.dump();
  return text.size() <= 40 ? text : text.substr(0, 37) + "...";
}

}  // namespace

void check_hf_keys(const Json& config, const ArchSource& at) {
  for (const KnownKey& known : kKnownKeys) {
    if (!at.has(known.key)) continue;
    const Json& value = config.at(known.key);
    if (!has_kind(value, known.kind)) {
      at.fail(known.key, std::string(known.key) + " must be " + kind_text(known.kind) + ", got " + short_dump(value));
    }
  }
  const Json type = config.value("model_type", Json());
  for (const UnmodelledKey& unmodelled : kUnmodelled) {
    // A key the config's model_type reads is the reader's (arch_reader.cpp checks its values).
    if (!at.has(unmodelled.key) || (type.is_string() && model_type_reads(type.get<std::string>(), unmodelled.key))) {
      continue;
    }
    const Json& value = config.at(unmodelled.key);
    if (unmodelled.in_effect(config, value)) {
      std::string what = std::string(1, '"') + unmodelled.key;
      what += "\": " + short_dump(value) + " turns on " + unmodelled.meaning + ", which tpsim does not model yet; it ";
      what += "models " + join_names(modelled_model_types()) + " decoders (docs/scenarios.md)";
      at.fail(unmodelled.key, what);
    }
  }
}

std::vector<std::string> unmodelled_keys() {
  std::vector<std::string> keys;
  for (const UnmodelledKey& unmodelled : kUnmodelled) keys.emplace_back(unmodelled.key);
  return keys;
}

}  // namespace tpsim::model
