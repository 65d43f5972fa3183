// Hardening tests: a scratch folder of input files, and the check that a command was refused as bad input
// should be (exit 2, one stderr line naming where and what, nothing written).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli/cli_support.hpp"

namespace tpsim::test {

// A fresh folder per test case (each runs in its own process).
class Scratch {
 public:
  explicit Scratch(const std::string& name)
      : dir_(std::filesystem::temp_directory_path() / ("tpsim_hardening_" + std::to_string(::getpid())) / name) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  // Writes `content` to the file `name` in the folder; returns its path.
  std::string file(const std::string& name, const std::string& content) const {
    const std::string path = this->path(name);
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

// Exit 2 and one stderr line "tpsim: error: WHERE...WHAT..." (WHERE a location prefix such as "file:3:").
inline void check_refused(const CommandResult& result, const std::string& where, const std::string& what) {
  INFO("stderr: " << result.err);
  CHECK(result.exit_code == 2);
  CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
  CHECK(result.err.rfind("tpsim: error: " + where, 0) == 0);
  CHECK(result.err.find(what) != std::string::npos);
}

// A small valid scenario (qwen3-0.6b, one layer, tp 8); line 7 is its only variant.
inline const std::string kSmallScenario =
    "name: t\nmodel: qwen3-0.6b\nhardware: {gpu: h100-sxm}\n"
    "workload: {phase: forward, batch: 1, seq_len: 512, layers: 1}\nparallelism: {tp: 8}\n"
    "variants:\n  - {name: sp, tp_mode: sp}\n";

}  // namespace tpsim::test
