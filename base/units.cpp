// Parsing of byte sizes with binary and decimal suffixes.
#include "base/units.hpp"

#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "base/input_error.hpp"

namespace tpsim::model {

double parse_bytes(const std::string& text) {
  static const std::vector<std::pair<std::string, double>> kUnits = {{"KiB", 1024.0},
                                                                     {"MiB", 1024.0 * 1024},
                                                                     {"GiB", 1024.0 * 1024 * 1024},
                                                                     {"TiB", 1024.0 * 1024 * 1024 * 1024},
                                                                     {"KB", 1e3},
                                                                     {"MB", 1e6},
                                                                     {"GB", 1e9},
                                                                     {"TB", 1e12},
                                                                     {"B", 1.0},
                                                                     {"", 1.0}};
  for (const auto& [suffix, scale] : kUnits) {
    if (text.size() <= suffix.size() || text.compare(text.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::string digits = text.substr(0, text.size() - suffix.size());
    double value = 0;
    size_t used = 0;
    try {
      value = std::stod(digits, &used);
    } catch (const std::exception&) {
      break;
    }
    if (used != digits.size() || !(value > 0) || !std::isfinite(value)) break;
    if (value * scale > kMaxSimulatedBytes) {
      throw InputError("'" + text + "' is over the largest size tpsim simulates, 1 PiB");
    }
    return value * scale;
  }
  throw InputError("'" + text +
                   "' is not a size; expected a positive size such as 1048576, 64KiB, 16MiB, 2GiB or 1.5GB");
}

std::string format_number(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024 && u < 5) {
    bytes /= 1024;
    ++u;
  }
  // From 99.95 up (as far as 1023.9) "%.3g" would round to an exponent ("1e+03"): whole units instead.
  const bool whole = std::abs(bytes - std::round(bytes)) < 1e-9 || bytes >= 99.95;
  return format_number(whole ? "%.0f" : "%.3g", bytes) + " " + units[u];
}

}  // namespace tpsim::model
