// The routing file's reader: one line per (layer, expert), every error located.
#include "input/moe_routing_file.hpp"

#include <cmath>
#include <sstream>

#include "base/input_error.hpp"
#include "base/input_file.hpp"
#include "base/limits.hpp"

namespace tpsim::model {
namespace {

const char* const kHeader = "layer,expert,tokens";

// A field of a row: a whole number in [0, max) (layer, expert) or a finite count >= 0 (tokens).
double field_value(const std::string& path, int line0, int col0, const std::string& text, const char* name, double max,
                   bool whole) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const bool ok = used == text.size() && !text.empty() && std::isfinite(value) && value >= 0 && value < max &&
                  (!whole || value == std::floor(value));
  if (!ok) {
    std::ostringstream valid;
    valid << name << " must be " << (whole ? "a whole number from 0 to " : "a count >= 0 below ")
          << max - (whole ? 1 : 0);
    throw InputError(format_location(path, line0, col0), valid.str() + ", got '" + text + "'");
  }
  return value;
}

}  // namespace

std::vector<std::vector<double>> read_routing_file(const std::string& path, int64_t experts, int64_t layers,
                                                   int64_t simulated) {
  return parse_routing_file(read_input_file(path, "routing", kMaxTextFileBytes), path, experts, layers, simulated);
}

std::vector<std::vector<double>> parse_routing_file(const std::string& text, const std::string& path, int64_t experts,
                                                    int64_t layers, int64_t simulated) {
  std::vector<std::vector<double>> tokens(static_cast<size_t>(layers),
                                          std::vector<double>(static_cast<size_t>(experts), -1.0));
  std::istringstream lines(text);
  std::string line;
  int line0 = 0;
  for (; std::getline(lines, line); ++line0) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line0 == 0) {
      if (line != kHeader) {
        throw InputError(format_location(path, 0, 0), "a routing file starts with the header \"" +
                                                          std::string(kHeader) + "\", got \"" + line + "\"");
      }
      continue;
    }
    if (line.empty()) continue;
    std::vector<std::string> fields;
    std::vector<int> columns;
    size_t start = 0;
    while (true) {
      const size_t comma = line.find(',', start);
      fields.push_back(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      columns.push_back(static_cast<int>(start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (fields.size() != 3) {
      throw InputError(format_location(path, line0, 0),
                       "a row has 3 fields (" + std::string(kHeader) + "), got " + std::to_string(fields.size()));
    }
    const auto layer = static_cast<size_t>(
        field_value(path, line0, columns[0], fields[0], "layer", static_cast<double>(layers), true));
    const auto expert = static_cast<size_t>(
        field_value(path, line0, columns[1], fields[1], "expert", static_cast<double>(experts), true));
    // 1e18: far above any router's count (a trillion-token run routes ~1e13 copies per layer), finite in sums.
    const double count = field_value(path, line0, columns[2], fields[2], "tokens", 1e18, false);
    if (tokens[layer][expert] >= 0) {
      throw InputError(format_location(path, line0, 0),
                       "layer " + std::to_string(layer) + ", expert " + std::to_string(expert) + " is given twice");
    }
    tokens[layer][expert] = count;
  }
  if (line0 == 0)
    throw InputError(format_location(path, -1, -1),
                     "a routing file needs the header \"" + std::string(kHeader) + "\" and rows");
  for (size_t layer = 0; layer < tokens.size(); ++layer) {
    double total = 0;
    for (double& count : tokens[layer]) total += count = std::max(count, 0.0);
    if (total <= 0 && static_cast<int64_t>(layer) < simulated) {
      throw InputError(format_location(path, -1, -1),
                       "layer " + std::to_string(layer) +
                           " has no tokens; the file must route tokens in every simulated "
                           "layer (0 to " +
                           std::to_string(simulated - 1) + ")");
    }
    for (double& count : tokens[layer]) count = total > 0 ? count / total : 0.0;
  }
  return tokens;
}

}  // namespace tpsim::model
