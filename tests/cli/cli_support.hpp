// Runs the tpsim binary from tests and captures its exit code, stdout and stderr.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tpsim::test {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs `tpsim ARGS` from the source tree, so scenario paths are relative to it; `env` is a prefix
// of VAR=value assignments for the command.
inline CommandResult run_tpsim(const std::string& args, const std::string& env = "") {
  // Unique per process: ctest -j runs test cases in parallel.
  const std::string stem =
      (std::filesystem::temp_directory_path() / ("tpsim_test_" + std::to_string(::getpid()))).string();
  const std::string out_file = stem + ".out";
  const std::string err_file = stem + ".err";
  const std::string command = "cd " + std::string(TPSIM_SOURCE_DIR) + " && " + env + " " + TPSIM_BINARY + " " + args +
                              " >" + out_file + " 2>" + err_file;
  CommandResult result;
  const int status = std::system(command.c_str());
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_file(out_file);
  result.err = read_file(err_file);
  std::remove(out_file.c_str());
  std::remove(err_file.c_str());
  return result;
}

}  // namespace tpsim::test
