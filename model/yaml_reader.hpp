// Checked access to a YAML document: every error names file:line:col, what is wrong and what is valid.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

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
  // A node as messages show it: 'scalar', a list, a mapping or nothing.
  static std::string show(const YAML::Node& node);

  // Requires a mapping whose keys are all in `allowed`; `context` names it ("workload").
  void expect_map(const YAML::Node& node, const std::string& context, const std::vector<std::string>& allowed) const;
  void require(const YAML::Node& map, const std::string& key, const std::string& context) const;

  std::string string(const YAML::Node& node, const std::string& what) const;
  int64_t positive_int(const YAML::Node& node, const std::string& what) const;
  double positive_number(const YAML::Node& node, const std::string& what) const;
  double non_negative_number(const YAML::Node& node, const std::string& what) const;
  bool boolean(const YAML::Node& node, const std::string& what) const;
  // One of `valid`, else an error listing them.
  std::string choice(const YAML::Node& node, const std::string& what, const std::vector<std::string>& valid) const;

 private:
  std::string file_;
};

}  // namespace tpsim::model
