// Writes a whole output at once: to stdout for "-", else through model/output_file.hpp (atomic for
// regular files, so a failed run never leaves a half-written file).
#pragma once

#include <string>

namespace tpsim::cli {

void write_output(const std::string& path, const std::string& content);

// Flushes stdout; throws InputError when what was written there could not be (a full disk, /dev/full).
void finish_stdout();

}  // namespace tpsim::cli
