// Hugging Face config.json reader: required keys, types and positive values, with file:line:col errors.
#include "model/hf_config.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/input_error.hpp"
#include "model/presets.hpp"

namespace tpsim::model {
namespace {

struct TextPosition {
  int line0 = -1;
  int col0 = -1;
};

TextPosition position_of_byte(std::string_view text, size_t byte) {
  TextPosition pos{0, 0};
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++pos.line0;
      pos.col0 = 0;
    } else {
      ++pos.col0;
    }
  }
  return pos;
}

// nlohmann keeps no positions of values, so a key's location is where its quoted name first appears.
TextPosition position_of_key(std::string_view text, const std::string& key) {
  const size_t at = text.find("\"" + key + "\"");
  if (at == std::string_view::npos) return {};
  return position_of_byte(text, at);
}

class ConfigReader {
 public:
  ConfigReader(std::string_view text, const std::string& origin, const nlohmann::json& doc)
      : text_(text), origin_(origin), doc_(doc) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    const TextPosition pos = position_of_key(text_, key);
    throw InputError(format_location(origin_, pos.line0, pos.col0) + what);
  }

  bool has(const std::string& key) const { return doc_.contains(key) && !doc_.at(key).is_null(); }

  int64_t positive_int(const std::string& key) const {
    if (!has(key)) {
      throw InputError(origin_ + ": missing required key \"" + key +
                       "\" (a Hugging Face config.json of a decoder has hidden_size, intermediate_size, "
                       "num_attention_heads, num_hidden_layers, vocab_size)");
    }
    const auto& value = doc_.at(key);
    if (!value.is_number_integer() || value.get<int64_t>() <= 0) {
      fail(key, "\"" + key + "\" must be a positive integer, got " + value.dump());
    }
    return value.get<int64_t>();
  }

  int64_t positive_int_or(const std::string& key, int64_t fallback) const {
    return has(key) ? positive_int(key) : fallback;
  }

  bool boolean_or(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    const auto& value = doc_.at(key);
    if (!value.is_boolean()) fail(key, "\"" + key + "\" must be true or false, got " + value.dump());
    return value.get<bool>();
  }

  std::string string_or(const std::string& key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    const auto& value = doc_.at(key);
    if (!value.is_string()) fail(key, "\"" + key + "\" must be a string, got " + value.dump());
    return value.get<std::string>();
  }

 private:
  std::string_view text_;
  const std::string& origin_;
  const nlohmann::json& doc_;
};

void reject_unsupported(const ConfigReader& reader, const nlohmann::json& doc) {
  for (const char* moe_key : {"num_experts", "num_local_experts", "n_routed_experts"}) {
    if (doc.contains(moe_key)) {
      reader.fail(moe_key, std::string("MoE models (\"") + moe_key +
                               "\") are not supported yet; supported: dense llama, qwen2, qwen3, mistral decoders");
    }
  }
}

}  // namespace

ArchSpec parse_hf_config(std::string_view json_text, const std::string& origin, const std::string& name) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::parse_error& error) {
    const TextPosition pos = position_of_byte(json_text, error.byte == 0 ? 0 : error.byte - 1);
    throw InputError(format_location(origin, pos.line0, pos.col0) + "not valid JSON (" + error.what() + ")");
  }
  if (!doc.is_object()) throw InputError(origin + ": a config.json must be a JSON object");
  const ConfigReader reader(json_text, origin, doc);
  reject_unsupported(reader, doc);

  ArchSpec arch;
  arch.name = name;
  arch.model_type = reader.string_or("model_type", "llama");
  arch.hidden = reader.positive_int("hidden_size");
  arch.intermediate = reader.positive_int("intermediate_size");
  arch.heads = reader.positive_int("num_attention_heads");
  arch.layers = reader.positive_int("num_hidden_layers");
  arch.vocab = reader.positive_int("vocab_size");
  arch.kv_heads = reader.positive_int_or("num_key_value_heads", arch.heads);
  if (!reader.has("head_dim") && arch.hidden % arch.heads != 0) {
    reader.fail("num_attention_heads", "num_attention_heads must divide hidden_size when head_dim is not given");
  }
  arch.head_dim = reader.positive_int_or("head_dim", arch.hidden / arch.heads);
  if (arch.heads % arch.kv_heads != 0) {
    reader.fail("num_key_value_heads", "num_key_value_heads (" + std::to_string(arch.kv_heads) +
                                           ") must divide num_attention_heads (" + std::to_string(arch.heads) + ")");
  }
  arch.qk_norm = arch.model_type == "qwen3";
  arch.qkv_bias = reader.boolean_or("attention_bias", arch.model_type == "qwen2");
  arch.source = reader.string_or("_source", origin);
  return arch;
}

ArchSpec load_hf_config_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the config.json file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_hf_config(text.str(), path, path);
}

ArchSpec load_model_preset(const std::string& name) {
  const auto text = find_preset("models", name, "json");
  if (!text) {
    throw InputError("unknown model preset \"" + name + "\"; valid: " + join_names(preset_names("models")) +
                     ", or {hf_config: path/config.json}");
  }
  return parse_hf_config(*text, "presets/models/" + name + ".json", name);
}

}  // namespace tpsim::model
