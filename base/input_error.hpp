// The one exception type for bad user input: its message is a single line a user can act on.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace tpsim {

// Thrown for bad scenarios, configs, presets and arguments. The message names where
// (file:line:col when known), what is wrong, and what would be valid. Control characters and bytes
// that are not UTF-8 are escaped (\n, \x01, \xff), so the message is one printable line whatever
// input it echoes.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message);
  // A located error: `location` from format_location, `what` the rest (kept apart for re-locating).
  InputError(const std::string& location, const std::string& what);

  // The message without its location (all of it when it was built without one).
  const std::string& detail() const { return detail_; }

 private:
  std::string detail_;
};

// "file:line:col: " with 1-based line and column; omits the parts that are unknown (< 0).
std::string format_location(const std::string& file, int line0, int col0);

// Where a value was written in an input file: 0-based line and column, -1 where unknown. Readers capture it, so
// that later stages locate their errors without the parsed document.
struct SourceLocation {
  std::string file;
  int line0 = -1;
  int col0 = -1;
};
// format_location of `at`.
std::string format_location(const SourceLocation& at);
// Throws the InputError located at `at`.
[[noreturn]] void fail_at(const SourceLocation& at, const std::string& what);

// `text` as a message echoes a value from the input: control characters and invalid UTF-8 escaped,
// and cut to its first `max_chars` characters (with "... (N bytes)") when longer.
std::string echo_value(std::string_view text, size_t max_chars = 80);
// A path as messages echo it: escaped, and a long one cut to its last characters ("...tail/config.json").
std::string echo_path(std::string_view path);

// `text` with control characters and bytes that are not UTF-8 escaped; valid UTF-8 kept as it is.
std::string escape_controls(std::string_view text);
// The length of the valid UTF-8 sequence at the start of `text`, or 0 when it is not one.
size_t utf8_sequence_length(std::string_view text);

}  // namespace tpsim
