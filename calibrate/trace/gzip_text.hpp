// Gzip-compressed inputs (profiler traces are usually saved as .json.gz): detected by their magic bytes,
// inflated through zlib within the input size limit, with one-line errors naming the file.
#pragma once

#include <cstdint>
#include <string>

namespace tpsim::calibrate {

// Whether `bytes` start with gzip's magic (1f 8b).
bool is_gzip(const std::string& bytes);

// The inflated text of a gzip stream (concatenated members too). InputError "<path>: ..." for a corrupt or
// truncated stream, or when the text would pass `max_bytes` (naming the limit).
std::string gunzip(const std::string& bytes, const std::string& path, int64_t max_bytes);

}  // namespace tpsim::calibrate
