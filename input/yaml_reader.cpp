// YamlReader: typed, located reads of yaml-cpp nodes, and the document checks every reader relies on.
#include "input/yaml_reader.hpp"

#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

#include "base/input_error.hpp"
#include "base/input_file.hpp"
#include "base/limits.hpp"
#include "base/units.hpp"
#include "input/presets.hpp"

namespace tpsim::model {

std::string YamlReader::show(const YAML::Node& node) {
  if (node.IsScalar()) return "'" + echo_value(node.Scalar()) + "'";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "nothing";
}

void YamlReader::check_encoding(const std::string& text) const {
  int line = 0, column = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t length = utf8_sequence_length(std::string_view(text).substr(i));
    if (length == 0) {
      throw InputError(format_location(file_, line, column),
                       "not UTF-8 text (byte " + escape_controls(text.substr(i, 1)) + "); save the file as UTF-8");
    }
    if (text[i] == '\n') {
      ++line;
      column = 0;
    } else {
      ++column;
    }
    i += length;
  }
}

void YamlReader::check_tree(const YAML::Node& root) const {
  std::vector<YAML::Node> pending{root};
  int64_t work = 0;
  while (!pending.empty()) {
    const YAML::Node node = pending.back();
    pending.pop_back();
    if (++work > kMaxYamlWork) {
      fail(root, "the document expands to more than " + std::to_string(kMaxYamlWork) +
                     " nodes and bytes (aliases repeating large parts?); write it out plainly");
    }
    if (node.IsScalar()) work += static_cast<int64_t>(node.Scalar().size());
    if (node.IsSequence()) {
      for (const YAML::Node& item : node) pending.push_back(item);
    }
    if (!node.IsMap()) continue;
    std::map<std::string, YAML::Mark> seen;
    for (const auto& entry : node) {
      if (!entry.first.IsScalar()) {
        fail(entry.first, "a mapping key must be a plain name, got " + show(entry.first) + " (a '?' complex key)");
      }
      const auto [first, fresh] = seen.emplace(entry.first.Scalar(), entry.first.Mark());
      if (!fresh) {
        fail(entry.first, "key " + show(entry.first) + " is given twice in one mapping (first at line " +
                              std::to_string(first->second.line + 1) + "); give each key once");
      }
      pending.push_back(entry.second);
    }
  }
}

namespace {

// Records where each document of a YAML stream starts (its '---', or its first token); ignores the rest.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> marks;

  void OnDocumentStart(const YAML::Mark& mark) override { marks.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// Where a second document of `text` starts, if it has one. yaml-cpp restarts a document that does not move on (a stray
// ',' at the top) without end: only a document that starts past the first counts, and two are read at most.
std::optional<YAML::Mark> second_document(const std::string& text) {
  std::istringstream stream(text);
  YAML::Parser parser(stream);
  DocumentStarts starts;
  try {
    while (starts.marks.size() < 2 && parser.HandleNextDocument(starts)) {
    }
  } catch (const YAML::Exception&) {
    // A syntax error inside the second document: where it starts is known already.
  }
  if (starts.marks.size() < 2 || starts.marks[1].pos <= starts.marks[0].pos) return std::nullopt;
  return starts.marks[1];
}

}  // namespace

YAML::Node YamlReader::parse_text(const std::string& text) const {
  check_encoding(text);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& error) {
    throw InputError(format_location(file_, error.mark.line, error.mark.column), "YAML syntax error: " + error.msg);
  }
  // A second document would be dropped unread: say so where it starts.
  if (const std::optional<YAML::Mark> second = second_document(text)) {
    throw InputError(format_location(file_, second->line, second->column),
                     "a second YAML document starts here ('---'), and tpsim reads one document per file; remove "
                     "this line and what follows it, or merge it into the first document");
  }
  check_tree(root);
  return root;
}

YAML::Node YamlReader::parse_file() const {
  return parse_text(read_input_file(file_, "YAML", kMaxYamlFileBytes));
}

std::string YamlReader::where(const YAML::Node& at) const {
  return format_location(location(at));
}

SourceLocation YamlReader::location(const YAML::Node& at) const {
  const YAML::Mark mark = at.Mark();
  return SourceLocation{file_, mark.line, mark.column};
}

void YamlReader::fail(const YAML::Node& at, const std::string& what) const {
  throw InputError(where(at), what);
}

void YamlReader::expect_map(const YAML::Node& node, const std::string& context,
                            const std::vector<std::string>& allowed) const {
  if (!node.IsMap())
    fail(node, context + " must be a mapping with keys: " + join_names(allowed) + "; got " + show(node));
  for (const auto& entry : node) {
    const std::string& key = entry.first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      fail(entry.first, "unknown key '" + echo_value(key) + "' in " + context + "; valid keys: " + join_names(allowed));
    }
  }
}

void YamlReader::require(const YAML::Node& map, const std::string& key, const std::string& context) const {
  if (!map.IsMap()) fail(map, context + " must be a mapping (with the key '" + key + "'); got " + show(map));
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

int64_t YamlReader::int_in(const YAML::Node& node, const std::string& what, int64_t min, int64_t max) const {
  int64_t value = 0;
  if (!node.IsScalar() || !YAML::convert<int64_t>::decode(node, value) || value < min) {
    fail(node, what + " must be an integer of at least " + std::to_string(min) + ", got " + show(node));
  }
  if (value > max) {
    fail(node, what + " is " + std::to_string(value) + ", over tpsim's limit of " + std::to_string(max) +
                   " (docs/reliability.md)");
  }
  return value;
}

int YamlReader::count(const YAML::Node& node, const std::string& what, int max) const {
  return static_cast<int>(int_in(node, what, 1, max));
}

double YamlReader::positive_number(const YAML::Node& node, const std::string& what, double max) const {
  double value = 0;
  if (!node.IsScalar() || !YAML::convert<double>::decode(node, value) || !(value > 0) || !std::isfinite(value)) {
    fail(node, what + " must be a positive number, got " + show(node));
  }
  if (value > max) {
    fail(node, what + " is " + echo_value(node.Scalar()) + ", over tpsim's limit of " + format_number("%g", max) +
                   " (docs/reliability.md)");
  }
  return value;
}

double YamlReader::non_negative_number(const YAML::Node& node, const std::string& what) const {
  double value = 0;
  if (!node.IsScalar() || !YAML::convert<double>::decode(node, value) || !(value >= 0) || !std::isfinite(value)) {
    fail(node, what + " must be a number >= 0, got " + show(node));
  }
  return value;
}

double YamlReader::number_in(const YAML::Node& node, const std::string& what, double min, double max) const {
  double value = 0;
  if (!node.IsScalar() || !YAML::convert<double>::decode(node, value) || !(value >= min && value <= max)) {
    fail(node, what + " must be a number from " + format_number("%g", min) + " to " + format_number("%g", max) +
                   ", got " + show(node));
  }
  return value;
}

uint64_t YamlReader::seed(const YAML::Node& node, const std::string& what) const {
  constexpr double kMaxSeed = 9007199254740992.0;  // 2^53
  const double seed = number_in(node, what, 0, kMaxSeed);
  if (seed != std::floor(seed)) fail(node, what + " must be a whole number from 0 to 2^53");
  return static_cast<uint64_t>(seed);
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
