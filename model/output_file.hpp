// Writes a whole output file at once. A regular file (or a new one) is written to a temporary file in
// its folder and renamed into place, so a failed run never leaves a half-written file; a symbolic link
// is followed to its target (the link stays); a FIFO or device (/dev/null, /dev/stdout) is written through.
#pragma once

#include <string>
#include <string_view>

namespace tpsim {

// Throws InputError naming the path (shortened when long) on any failure, the target left as it was.
void write_output_file(const std::string& path, std::string_view content);

}  // namespace tpsim
