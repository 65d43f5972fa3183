// What the plan tests share: a plan text written to a temporary file, the error a plan text gets, and a plan's keys
// given values of every wrong kind.
#pragma once

#include <unistd.h>

#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/input_error.hpp"
#include "input/plan_file.hpp"

namespace tpsim::test {

// Writes `text` to a file named `name` in the temporary folder (the process id in its name) and returns its path.
inline std::string plan_temp_file(const std::string& name, const std::string& text) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tpsim_plan_" + std::to_string(::getpid()) + "_" + name)).string();
  std::ofstream(path) << text;
  return path;
}

// The error a plan text gets, or "" when it loads.
inline std::string plan_error(const std::string& text) {
  try {
    model::parse_plan(text, "p.yaml");
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

// Sets each of `keys` (a top-level key or "section.key") in `plan_text` to values of every wrong kind, one at a time,
// and checks that `load` (given the plan's text) either loads it or refuses it with one line located in p.yaml.
template <typename Load>
void check_wrong_kinds(const std::string& plan_text, const std::vector<std::string>& keys, const Load& load) {
  const std::vector<std::string> values = {"x", "-1", "0", "[]", "{}", "~", "[1, x]", "1.5", "99999999999999999999"};
  for (const std::string& key : keys) {
    for (const std::string& value : values) {
      YAML::Node root = YAML::Load(plan_text);
      const size_t dot = key.find('.');
      if (dot == std::string::npos) {
        root[key] = YAML::Load(value);
      } else {
        root[key.substr(0, dot)][key.substr(dot + 1)] = YAML::Load(value);
      }
      YAML::Emitter text;
      text << root;
      INFO(key + ": " + value);
      try {
        load(std::string(text.c_str()));
      } catch (const InputError& error) {
        const std::string what = error.what();
        CHECK(what.rfind("p.yaml:", 0) == 0);
        CHECK(what.find('\n') == std::string::npos);
      }
    }
  }
}

}  // namespace tpsim::test
