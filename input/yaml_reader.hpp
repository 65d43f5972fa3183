// Checked access to a YAML document: every error names file:line:col, what is wrong and what is valid.
// Parsing refuses, once for every reader, what no reader could use: text that is not UTF-8, mapping
// keys that are not plain scalars, a key given twice in one mapping, documents that aliases expand past
// kMaxYamlWork, and a second document ('---') in one file.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "base/enum_names.hpp"
#include "base/input_error.hpp"

namespace tpsim::model {

class YamlReader {
 public:
  explicit YamlReader(std::string file) : file_(std::move(file)) {}

  const std::string& file() const { return file_; }

  // Parses a whole file (or text) into a node; syntax errors carry their location.
  YAML::Node parse_file() const;
  YAML::Node parse_text(const std::string& text) const;

  [[noreturn]] void fail(const YAML::Node& at, const std::string& what) const;
  std::string where(const YAML::Node& at) const;
  // Where `at` was written, for errors raised after the document is gone (`at` must be a node of the document).
  SourceLocation location(const YAML::Node& at) const;
  // A node as messages show it: 'scalar' (escaped, shortened), a list, a mapping or nothing.
  static std::string show(const YAML::Node& node);

  // Requires a mapping whose keys are all in `allowed`; `context` names it ("workload").
  void expect_map(const YAML::Node& node, const std::string& context, const std::vector<std::string>& allowed) const;
  void require(const YAML::Node& map, const std::string& key, const std::string& context) const;

  std::string string(const YAML::Node& node, const std::string& what) const;
  int64_t positive_int(const YAML::Node& node, const std::string& what) const;
  // An integer in [min, max]; past max the message names the limit.
  int64_t int_in(const YAML::Node& node, const std::string& what, int64_t min, int64_t max) const;
  // A count in [1, max] as an int.
  int count(const YAML::Node& node, const std::string& what, int max) const;
  // Finite numbers: > 0 (up to `max`, past which the message names the limit), >= 0, or in [min, max].
  double positive_number(const YAML::Node& node, const std::string& what,
                         double max = std::numeric_limits<double>::max()) const;
  double non_negative_number(const YAML::Node& node, const std::string& what) const;
  double number_in(const YAML::Node& node, const std::string& what, double min, double max) const;
  bool boolean(const YAML::Node& node, const std::string& what) const;
  // A seed: a whole number from 0 to 2^53 (every integer below is exact in YAML's doubles).
  uint64_t seed(const YAML::Node& node, const std::string& what) const;
  // One of `valid`, else an error listing them.
  std::string choice(const YAML::Node& node, const std::string& what, const std::vector<std::string>& valid) const;
  // The value `table` reads for the node's name, else an error listing the table's names in its order.
  template <typename E, std::size_t N>
  E choice_of(const YAML::Node& node, const std::string& what, const EnumName<E> (&table)[N]) const {
    return *value_named(table, choice(node, what, names_of(table)));  // choice() accepts only names it reads
  }

 private:
  void check_encoding(const std::string& text) const;
  void check_tree(const YAML::Node& root) const;

  std::string file_;
};

}  // namespace tpsim::model
