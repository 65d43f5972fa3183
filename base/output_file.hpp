// Writes a whole output file at once. A regular file (or a new one) is written to a temporary file in
// its folder and renamed into place, so a failed run never leaves a half-written file; a symbolic link
// is followed to its target (the link stays); a FIFO or device (/dev/null, /dev/stdout) is written through.
// Several outputs of one command are written all or none.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tpsim {

// Throws InputError naming the path (shortened when long) on any failure, the target left as it was.
void write_output_file(const std::string& path, std::string_view content);

// Several outputs of one command, all or none: every regular (or new) file is first written to its temporary file,
// every FIFO or device written through, then `before_placing` runs (a command's stdout), and only when all of that
// succeeded are the files moved into place; a failure removes what was staged, no target replaced.
void write_output_files(const std::vector<std::pair<std::string, std::string_view>>& outputs,
                        const std::function<void()>& before_placing = {});

}  // namespace tpsim
