// What the plan tests share: a plan text written to a temporary file, the error a plan text gets, and a plan's keys
// given values of every wrong kind.
#pragma once

#include <unistd.h>

#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/input_error.hpp"
#include "cli/cli_support.hpp"
#include "input/plan_file.hpp"

namespace tpsim::test {

// A small training plan: Llama-3.1-8B on 8 H100s, tp 2 or 4, pp 1 or 2, two recomputations and schedules.
inline const std::string kSmallPlan =
    "model: llama-3.1-8b\n"
    "hardware: {gpu: h100-sxm, gpus: 8}\n"
    "workload: {global_batch: 8, seq_len: 2048}\n"
    "search: {tp: [2, 4], pp: [1, 2], micro_batch: 1, recompute: [selective, full], tp_mode: sp, "
    "schedule: [1f1b, zb-h1]}\n";

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

// The text before its first line's counts of simulated candidates (bounding leaves out other candidates in a shard
// than in the whole run) and every line after it.
inline std::string without_search_counts(const std::string& text) {
  const size_t line_end = text.find('\n');
  return text.substr(0, text.find("), ")) + text.substr(line_end);
}

// Runs the plan at `path` whole and as `shards` shards, each written with --json and --top `top`, and merges them
// with `tpsim plan merge`: the merged rows (and a serving plan's front), CSV and table equal the whole run's byte for
// byte.
inline void check_merge_matches_whole(const std::string& path, int shards, size_t top) {
  const std::string k = " --top " + std::to_string(top);
  const CommandResult whole = run_tpsim("plan " + path + k + " --json " + path + ".json --csv " + path + ".csv");
  REQUIRE(whole.exit_code == 0);
  std::string files;
  for (int i = 1; i <= shards; ++i) {
    const std::string shard = path + ".shard" + std::to_string(i) + ".json";
    const std::string which = std::to_string(i) + "/" + std::to_string(shards);
    REQUIRE(run_tpsim("plan " + path + k + " --shard " + which + " --json " + shard).exit_code == 0);
    files += " " + shard;
  }
  const CommandResult merged =
      run_tpsim("plan merge" + files + k + " --json " + path + ".merged.json --csv " + path + ".merged.csv");
  INFO(merged.err);
  REQUIRE(merged.exit_code == 0);
  const nlohmann::ordered_json a = nlohmann::ordered_json::parse(read_file(path + ".json"));
  const nlohmann::ordered_json b = nlohmann::ordered_json::parse(read_file(path + ".merged.json"));
  CHECK(a["rows"].dump(2) == b["rows"].dump(2));
  CHECK(a.value("front", nlohmann::ordered_json()).dump(2) == b.value("front", nlohmann::ordered_json()).dump(2));
  // Each shard bounds its own candidates (by its own top rows): the simulated and bounded counts add up to the whole
  // run's, each may differ.
  CHECK(a["simulated"].get<int64_t>() + a.value("bounded", int64_t{0}) ==
        b["simulated"].get<int64_t>() + b.value("bounded", int64_t{0}));
  CHECK(a["pruned"] == b["pruned"]);
  CHECK(read_file(path + ".csv") == read_file(path + ".merged.csv"));
  CHECK(without_search_counts(whole.out) == without_search_counts(merged.out));
  for (const std::string suffix : {".json", ".csv", ".merged.json", ".merged.csv"})
    std::filesystem::remove(path + suffix);
  for (int i = 1; i <= shards; ++i) std::filesystem::remove(path + ".shard" + std::to_string(i) + ".json");
}

// The plan `text` run whole and as 3 shards merged, with every row and with the shards' top `few` rows only (the
// union's top `few` are among them): check_merge_matches_whole.
inline void check_merge_of_plan(const std::string& text, size_t few) {
  const std::string path = plan_temp_file("merge.yaml", text);
  check_merge_matches_whole(path, 3, 100);
  check_merge_matches_whole(path, 3, few);
  std::filesystem::remove(path);
}

}  // namespace tpsim::test
