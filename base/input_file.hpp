// Input files read whole: only regular files (not a FIFO, a device or a folder), up to a size limit,
// with one-line errors that name the file (shortened when long) and say what is wrong.
#pragma once

#include <cstdint>
#include <string>

namespace tpsim {

// The bytes of `path`; `what` names the kind of file in errors ("scenario", "profile"). Refuses a file
// over `max_bytes` naming the limit, with `advice` (how to get under it) when given.
std::string read_input_file(const std::string& path, const std::string& what, int64_t max_bytes,
                            const std::string& advice = "");

// Whether `path` names a regular file; false (never an exception) for a missing file, a folder or a
// path the system refuses (too long, a component that is not a folder).
bool is_regular_file(const std::string& path);

// `path` as given when absolute, else beside `scenario_file` (a path a scenario names is relative to it).
std::string resolve_relative(const std::string& scenario_file, const std::string& path);

// Bytes as messages state limits and sizes: "16 MiB", "1 GiB", "1234 bytes".
std::string byte_count_text(int64_t bytes);

}  // namespace tpsim
