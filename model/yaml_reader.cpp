// YamlReader: typed, located reads of yaml-cpp nodes.
#include "model/yaml_reader.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "model/input_error.hpp"
#include "model/presets.hpp"

namespace tpsim::model {

std::string YamlReader::show(const YAML::Node& node) {
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "nothing";
}

YAML::Node YamlReader::parse_text(const std::string& text) const {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& error) {
    throw InputError(format_location(file_, error.mark.line, error.mark.column) + "YAML syntax error: " + error.msg);
  }
}

YAML::Node YamlReader::parse_file() const {
  std::ifstream in(file_, std::ios::binary);
  if (!in) throw InputError(file_ + ": cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_text(text.str());
}

std::string YamlReader::where(const YAML::Node& at) const {
  const YAML::Mark mark = at.Mark();
  return format_location(file_, mark.line, mark.column);
}

void YamlReader::fail(const YAML::Node& at, const std::string& what) const {
  throw InputError(where(at) + what);
}

void YamlReader::expect_map(const YAML::Node& node, const std::string& context,
                            const std::vector<std::string>& allowed) const {
  if (!node.IsMap())
    fail(node, context + " must be a mapping with keys: " + join_names(allowed) + "; got " + show(node));
  for (const auto& entry : node) {
    const std::string key = entry.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      fail(entry.first, "unknown key '" + key + "' in " + context + "; valid keys: " + join_names(allowed));
    }
  }
}

void YamlReader::require(const YAML::Node& map, const std::string& key, const std::string& context) const {
  if (!map[key]) fail(map, context + " needs the key '" + key + "'");
}

std::string YamlReader::string(const YAML::Node& node, const std::string& what) const {
  if (!node.IsScalar()) fail(node, what + " must be a string, got " + show(node));
  return node.Scalar();
}

int64_t YamlReader::positive_int(const YAML::Node& node, const std::string& what) const {
  int64_t value = 0;
  if (!node.IsScalar() || !YAML::convert<int64_t>::decode(node, value) || value <= 0) {
    fail(node, what + " must be a positive integer, got " + show(node));
  }
  return value;
}

double YamlReader::positive_number(const YAML::Node& node, const std::string& what) const {
  double value = 0;
  if (!node.IsScalar() || !YAML::convert<double>::decode(node, value) || !(value > 0)) {
    fail(node, what + " must be a positive number, got " + show(node));
  }
  return value;
}

double YamlReader::non_negative_number(const YAML::Node& node, const std::string& what) const {
  double value = 0;
  if (!node.IsScalar() || !YAML::convert<double>::decode(node, value) || !(value >= 0)) {
    fail(node, what + " must be a number >= 0, got " + show(node));
  }
  return value;
}

bool YamlReader::boolean(const YAML::Node& node, const std::string& what) const {
  bool value = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
    fail(node, what + " must be true or false, got " + show(node));
  }
  return value;
}

std::string YamlReader::choice(const YAML::Node& node, const std::string& what,
                               const std::vector<std::string>& valid) const {
  if (!node.IsScalar() || std::find(valid.begin(), valid.end(), node.Scalar()) == valid.end()) {
    fail(node, what + " must be one of: " + join_names(valid) + "; got " + show(node));
  }
  return node.Scalar();
}

}  // namespace tpsim::model
