// The one exception type for bad user input: its message is a single line a user can act on.
#pragma once

#include <stdexcept>
#include <string>

namespace tpsim {

// Thrown for bad scenarios, configs, presets and arguments. The message names where
// (file:line:col when known), what is wrong, and what would be valid.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

// "file:line:col: " with 1-based line and column; omits the parts that are unknown (< 0).
std::string format_location(const std::string& file, int line0, int col0);

}  // namespace tpsim
