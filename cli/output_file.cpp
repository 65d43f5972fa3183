// Atomic output writes (temporary file + rename).
#include "cli/output_file.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "model/input_error.hpp"

namespace tpsim::cli {

void write_output(const std::string& path, const std::string& content) {
  if (path == "-") {
    std::cout << content << std::flush;
    return;
  }
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path + ": cannot write here (check the directory exists and is writable)");
    out << content;
    if (!out.flush()) throw InputError(path + ": write failed");
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::remove(temporary.c_str());
    throw InputError(path + ": cannot replace the file: " + error.message());
  }
}

}  // namespace tpsim::cli
