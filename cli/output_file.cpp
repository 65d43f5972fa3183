// Outputs of commands: stdout for "-", else the file writer of base/output_file.hpp.
#include "cli/output_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "base/input_error.hpp"
#include "base/output_file.hpp"

namespace tpsim::cli {

void write_output(const std::string& path, const std::string& content) {
  if (path != "-") return write_output_file(path, content);
  std::cout << content;
  finish_stdout();
}

void write_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  std::vector<std::pair<std::string, std::string_view>> files;
  std::string to_stdout;
  for (const auto& [path, content] : outputs) {
    if (path == "-") {
      to_stdout += content;
    } else {
      files.emplace_back(path, content);
    }
  }
  // Stdout is written once every file is staged: a file that cannot be written stops the command before it.
  write_output_files(files, [&] {
    if (to_stdout.empty()) return;
    std::cout << to_stdout;
    finish_stdout();
  });
}

void finish_stdout() {
  if (std::cout.flush() && std::fflush(stdout) == 0 && !std::ferror(stdout)) return;
  const int error = errno;
  // A reader that closed the pipe early (`tpsim run S --trace - | head`) took what it wanted: the command has done its
  // work, as `git log | head` has; nothing more goes to stdout, and nothing is reported.
  if (error == EPIPE) {
    std::cout.clear(std::ios::badbit);
    return;
  }
  throw InputError(std::string("cannot write to standard output: ") + std::strerror(error));
}

}  // namespace tpsim::cli
