// Formats source locations and echoed values for InputError messages.
#include "base/input_error.hpp"

#include <cstdio>

namespace tpsim {
namespace {

// A path echoed longer than this keeps its tail (the file name is what a user recognises).
constexpr size_t kMaxEchoedPath = 120;

std::string escaped_byte(unsigned char byte) {
  if (byte == '\n') return "\\n";
  if (byte == '\t') return "\\t";
  if (byte == '\r') return "\\r";
  char text[5];
  std::snprintf(text, sizeof text, "\\x%02x", byte);
  return text;
}

}  // namespace

InputError::InputError(const std::string& message)
    : std::runtime_error(escape_controls(message)), detail_(escape_controls(message)) {}

InputError::InputError(const std::string& location, const std::string& what)
    : std::runtime_error(escape_controls(location + what)), detail_(escape_controls(what)) {}

size_t utf8_sequence_length(std::string_view text) {
  if (text.empty()) return 0;
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the second byte's range (RFC 3629: no overlongs, no surrogates)
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (text.size() < length || byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return length;
}

std::string escape_controls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const size_t length = utf8_sequence_length(text.substr(i));
    if (length == 0 || byte < 0x20 || byte == 0x7F) {
      out += escaped_byte(byte);
      ++i;
      continue;
    }
    out.append(text.substr(i, length));
    i += length;
  }
  return out;
}

std::string echo_value(std::string_view text, size_t max_chars) {
  if (text.size() <= max_chars) return escape_controls(text);
  size_t cut = max_chars;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return escape_controls(text.substr(0, cut)) + "... (" + std::to_string(text.size()) + " bytes)";
}

std::string echo_path(std::string_view path) {
  if (path.size() <= kMaxEchoedPath) return escape_controls(path);
  size_t start = path.size() - kMaxEchoedPath;
  while (start < path.size() && (static_cast<unsigned char>(path[start]) & 0xC0) == 0x80) ++start;
  return "..." + escape_controls(path.substr(start)) + " (a path of " + std::to_string(path.size()) + " bytes)";
}

std::string format_location(const std::string& file, int line0, int col0) {
  std::string out = echo_path(file);
  if (line0 >= 0) {
    out += ":" + std::to_string(line0 + 1);
    if (col0 >= 0) out += ":" + std::to_string(col0 + 1);
  }
  return out + ": ";
}

std::string format_location(const SourceLocation& at) {
  return format_location(at.file, at.line0, at.col0);
}

void fail_at(const SourceLocation& at, const std::string& what) {
  throw InputError(format_location(at), what);
}

}  // namespace tpsim
