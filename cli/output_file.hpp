// Writes a whole output at once: to stdout for "-", else through base/output_file.hpp (atomic for
// regular files, so a failed run never leaves a half-written file); several outputs all or none.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tpsim::cli {

void write_output(const std::string& path, const std::string& content);

// Several outputs of one command (path, content), "-" for stdout, written all or none (write_output_files): a failed
// one leaves no other behind.
void write_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

// Flushes stdout; throws InputError when what was written there could not be (a full disk, /dev/full).
void finish_stdout();

}  // namespace tpsim::cli
