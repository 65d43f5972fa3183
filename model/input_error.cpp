// Formats source locations for InputError messages.
#include "model/input_error.hpp"

namespace tpsim {

std::string format_location(const std::string& file, int line0, int col0) {
  std::string out = file;
  if (line0 >= 0) {
    out += ":" + std::to_string(line0 + 1);
    if (col0 >= 0) out += ":" + std::to_string(col0 + 1);
  }
  return out + ": ";
}

}  // namespace tpsim
