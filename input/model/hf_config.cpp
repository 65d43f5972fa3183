// Hugging Face config.json reader: JSON syntax, then the keys (hf_keys) and the shapes (arch_reader),
// every error located at file:line:col.
#include "input/model/hf_config.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "base/input_error.hpp"
#include "base/input_file.hpp"
#include "base/json_keys.hpp"
#include "base/json_parse.hpp"
#include "base/limits.hpp"
#include "input/model/arch_reader.hpp"
#include "input/model/hf_keys.hpp"
#include "input/presets.hpp"

namespace tpsim::model {
namespace {

// nlohmann keeps no positions of values, so a key's location is where its quoted name first appears.
TextPosition position_of_key(std::string_view text, const std::string& key) {
  const size_t at = text.find("\"" + key + "\"");
  if (at == std::string_view::npos) return {};
  return position_of_byte(text, at);
}

// The top-level keys of a parsed config.json, located in its text.
class JsonSource final : public ArchSource {
 public:
  JsonSource(std::string_view text, const std::string& origin, const nlohmann::json& doc)
      : text_(text), origin_(origin), doc_(doc) {}

  bool has(const std::string& key) const override { return doc_.contains(key) && !doc_.at(key).is_null(); }

  std::optional<int64_t> integer(const std::string& key) const override {
    const auto& value = doc_.at(key);
    if (value.is_number_unsigned()) {
      const uint64_t big = value.get<uint64_t>();
      constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
      return static_cast<int64_t>(big > kMax ? kMax : big);
    }
    if (value.is_number_integer()) return value.get<int64_t>();
    return std::nullopt;
  }

  std::optional<std::string> text(const std::string& key) const override {
    const auto& value = doc_.at(key);
    if (!value.is_string()) return std::nullopt;
    return value.get<std::string>();
  }

  std::optional<bool> flag(const std::string& key) const override {
    const auto& value = doc_.at(key);
    if (!value.is_boolean()) return std::nullopt;
    return value.get<bool>();
  }

  std::optional<double> number(const std::string& key) const override {
    const auto& value = doc_.at(key);
    if (!value.is_number() || !std::isfinite(value.get<double>())) return std::nullopt;
    return value.get<double>();
  }

  std::optional<std::vector<std::string>> text_list(const std::string& key) const override {
    const auto& value = doc_.at(key);
    if (!value.is_array()) return std::nullopt;
    std::vector<std::string> out;
    for (const auto& item : value) {
      if (!item.is_string()) return std::nullopt;
      out.push_back(item.get<std::string>());
    }
    return out;
  }

  std::optional<std::vector<int64_t>> integer_list(const std::string& key) const override {
    const auto& value = doc_.at(key);
    if (!value.is_array()) return std::nullopt;
    std::vector<int64_t> out;
    for (const auto& item : value) {
      constexpr auto kLargest = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
      if (!item.is_number_integer() || (item.is_number_unsigned() && item.get<uint64_t>() > kLargest)) {
        return std::nullopt;
      }
      out.push_back(item.get<int64_t>());
    }
    return out;
  }

  std::string shown(const std::string& key) const override {
    return doc_.contains(key) ? echo_value(doc_.at(key).dump()) : "nothing";
  }

  InputError error_at(const std::string& key, const std::string& what) const override {
    const TextPosition pos = position_of_key(text_, key);
    return InputError(format_location(origin_, pos.line0, pos.col0), what);
  }

 private:
  std::string_view text_;
  const std::string& origin_;
  const nlohmann::json& doc_;
};

}  // namespace

ArchSpec parse_hf_config(std::string_view json_text, const std::string& origin, const std::string& name) {
  const nlohmann::json doc = parse_json_located(json_text, origin);
  if (!doc.is_object()) throw InputError(format_location(origin, -1, -1), "a config.json must be a JSON object");
  refuse_duplicate_keys(json_text, origin);
  const JsonSource source(json_text, origin, doc);
  check_hf_keys(doc, source);
  ArchSpec arch = read_arch(source, MissingModelType::kRefuse);
  arch.name = name;
  arch.source = source.has("_source") ? *source.text("_source") : origin;
  return arch;
}

ArchSpec load_hf_config_file(const std::string& path) {
  return parse_hf_config(read_input_file(path, "config.json", kMaxTextFileBytes), path, path);
}

ArchSpec load_model_preset(const std::string& name) {
  // Parsed once per process: a plan loads its model's preset for each of its candidates.
  static std::map<std::string, ArchSpec> parsed;
  if (const auto it = parsed.find(name); it != parsed.end()) return it->second;
  const auto text = find_preset("models", name, "json");
  if (!text) {
    throw InputError("unknown model preset \"" + name + "\"; valid: " + join_names(preset_names("models")) +
                     ", or {hf_config: path/config.json}");
  }
  return parsed.emplace(name, parse_hf_config(*text, "presets/models/" + name + ".json", name)).first->second;
}

}  // namespace tpsim::model
