// Inline model mappings: their key set, and YAML access to them for the shared arch reader.
#include "input/model/inline_model.hpp"

#include <cmath>

#include "input/model/arch_reader.hpp"

namespace tpsim::model {
namespace {

const std::vector<std::string> kInlineModelKeys = {"name",
                                                   "model_type",
                                                   "hidden_size",
                                                   "intermediate_size",
                                                   "num_attention_heads",
                                                   "num_key_value_heads",
                                                   "head_dim",
                                                   "num_hidden_layers",
                                                   "vocab_size",
                                                   "tie_word_embeddings",
                                                   "hf_config"};

// The keys of an inline model mapping, located by their YAML marks.
class YamlSource final : public ArchSource {
 public:
  YamlSource(const YamlReader& in, const YAML::Node& map) : in_(in), map_(map) {}

  bool has(const std::string& key) const override { return map_[key] && !map_[key].IsNull(); }

  std::optional<int64_t> integer(const std::string& key) const override {
    int64_t value = 0;
    const YAML::Node node = map_[key];
    if (!node.IsScalar() || !YAML::convert<int64_t>::decode(node, value)) return std::nullopt;
    return value;
  }

  std::optional<std::string> text(const std::string& key) const override {
    const YAML::Node node = map_[key];
    if (!node.IsScalar()) return std::nullopt;
    return node.Scalar();
  }

  std::optional<bool> flag(const std::string& key) const override {
    bool value = false;
    const YAML::Node node = map_[key];
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) return std::nullopt;
    return value;
  }

  std::optional<double> number(const std::string& key) const override {
    double value = 0;
    const YAML::Node node = map_[key];
    if (!node.IsScalar() || !YAML::convert<double>::decode(node, value) || !std::isfinite(value)) return std::nullopt;
    return value;
  }

  std::optional<std::vector<std::string>> text_list(const std::string& key) const override {
    const YAML::Node node = map_[key];
    if (!node.IsSequence()) return std::nullopt;
    std::vector<std::string> out;
    for (const YAML::Node& item : node) {
      if (!item.IsScalar()) return std::nullopt;
      out.push_back(item.Scalar());
    }
    return out;
  }

  std::optional<std::vector<int64_t>> integer_list(const std::string& key) const override {
    const YAML::Node node = map_[key];
    if (!node.IsSequence()) return std::nullopt;
    std::vector<int64_t> out;
    for (const YAML::Node& item : node) {
      int64_t value = 0;
      if (!item.IsScalar() || !YAML::convert<int64_t>::decode(item, value)) return std::nullopt;
      out.push_back(value);
    }
    return out;
  }

  std::string shown(const std::string& key) const override { return YamlReader::show(map_[key]); }

  InputError error_at(const std::string& key, const std::string& what) const override {
    return InputError(in_.where(map_[key] ? map_[key] : map_), "model: " + what);
  }

 private:
  const YamlReader& in_;
  const YAML::Node map_;
};

}  // namespace

ArchSpec read_inline_model(const YamlReader& in, const YAML::Node& node) {
  in.expect_map(node, "model", kInlineModelKeys);
  ArchSpec arch = read_arch(YamlSource(in, node), MissingModelType::kLlama);
  arch.name = node["name"] ? in.string(node["name"], "model.name") : "inline";
  arch.source = in.file() + " (inline)";
  return arch;
}

}  // namespace tpsim::model
