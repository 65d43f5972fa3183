// Inflating gzip streams through zlib's inflate with gzip header detection (windowBits 15 + 32).
#include "calibrate/trace/gzip_text.hpp"

#include <zlib.h>

#include "base/input_error.hpp"
#include "base/input_file.hpp"

namespace tpsim::calibrate {

bool is_gzip(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

namespace {

// Ends the stream whatever happens.
struct Inflater {
  z_stream z{};
  bool open = false;
  ~Inflater() {
    if (open) inflateEnd(&z);
  }
};

}  // namespace

std::string gunzip(const std::string& bytes, const std::string& path, int64_t max_bytes) {
  Inflater in;
  if (inflateInit2(&in.z, 15 + 32) != Z_OK) throw InputError(echo_path(path) + ": zlib could not start inflating");
  in.open = true;
  in.z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  in.z.avail_in = static_cast<uInt>(std::min<size_t>(bytes.size(), UINT32_MAX));
  size_t fed = in.z.avail_in;
  std::string out;
  char buffer[1 << 16];
  for (;;) {
    in.z.next_out = reinterpret_cast<Bytef*>(buffer);
    in.z.avail_out = sizeof buffer;
    const int rc = inflate(&in.z, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - in.z.avail_out);
    if (static_cast<int64_t>(out.size()) > max_bytes) {
      throw InputError(echo_path(path) + ": the trace inflates past " + byte_count_text(max_bytes) +
                       ", the limit on input files: profile fewer steps (torch.profiler's schedule) or split it");
    }
    const size_t offset = fed - in.z.avail_in;
    if (rc == Z_STREAM_END) {
      if (offset >= bytes.size()) return out;
      // Another member follows (gzip files may be concatenated); trailing zeros end it.
      if (bytes.find_first_not_of('\0', offset) == std::string::npos) return out;
      inflateReset(&in.z);
      continue;
    }
    if (rc == Z_BUF_ERROR && in.z.avail_in == 0 && fed >= bytes.size()) {
      throw InputError(echo_path(path) + ": the gzip stream ends early (truncated at byte " +
                       std::to_string(bytes.size()) + ")");
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      throw InputError(echo_path(path) + ": not a valid gzip stream at byte " + std::to_string(offset) + " (" +
                       (in.z.msg ? in.z.msg : "zlib error " + std::to_string(rc)) + ")");
    }
    if (in.z.avail_in == 0 && fed < bytes.size()) {
      const size_t more = std::min<size_t>(bytes.size() - fed, UINT32_MAX);
      in.z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + fed));
      in.z.avail_in = static_cast<uInt>(more);
      fed += more;
    }
  }
}

}  // namespace tpsim::calibrate
