// Writes a whole output at once: to stdout for "-", else to a temporary file renamed into place,
// so a failed run never leaves a half-written file.
#pragma once

#include <string>

namespace tpsim::cli {

void write_output(const std::string& path, const std::string& content);

}  // namespace tpsim::cli
