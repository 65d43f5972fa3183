// Outputs of commands: stdout for "-", else the file writer of model/output_file.hpp.
#include "cli/output_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "model/input_error.hpp"
#include "model/output_file.hpp"

namespace tpsim::cli {

void write_output(const std::string& path, const std::string& content) {
  if (path != "-") return write_output_file(path, content);
  std::cout << content;
  finish_stdout();
}

void finish_stdout() {
  if (!std::cout.flush() || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    throw InputError(std::string("cannot write to standard output: ") + std::strerror(errno));
  }
}

}  // namespace tpsim::cli
