// Geometric size sweeps and size parsing.
#include "real/core/size_sweep.hpp"

#include <cmath>

#include "base/input_error.hpp"
#include "base/units.hpp"

namespace tpsim::real {

std::vector<int64_t> geometric_sizes(int64_t min_bytes, int64_t max_bytes, double factor, int64_t alignment) {
  if (min_bytes <= 0 || max_bytes <= 0) throw InputError("sizes must be positive");
  if (min_bytes > max_bytes) {
    throw InputError("--min-bytes " + std::to_string(min_bytes) + " is above --max-bytes " + std::to_string(max_bytes));
  }
  if (!(factor > 1.0) || !std::isfinite(factor)) throw InputError("--factor must be a number above 1");
  auto rounded = [alignment](double bytes) {
    const auto whole = static_cast<int64_t>(bytes) / alignment * alignment;
    return whole < alignment ? alignment : whole;
  };
  std::vector<int64_t> sizes;
  for (double bytes = static_cast<double>(min_bytes); bytes < static_cast<double>(max_bytes) * (1 + 1e-12);
       bytes *= factor) {
    const int64_t size = rounded(bytes);
    if (sizes.empty() || sizes.back() != size) sizes.push_back(size);
  }
  const int64_t last = rounded(static_cast<double>(max_bytes));
  if (sizes.back() != last) sizes.push_back(last);
  return sizes;
}

int64_t parse_size(const std::string& text, const std::string& option) {
  double bytes = 0;
  try {
    bytes = model::parse_bytes(text);
  } catch (const InputError& error) {
    throw InputError(option + " " + text + ": " + error.what());
  }
  if (!(bytes >= 1) || bytes != std::floor(bytes) || bytes > 9e18) {
    throw InputError(option + " " + text + ": a size is a positive whole number of bytes (e.g. 65536, 64KiB, 1GiB)");
  }
  return static_cast<int64_t>(bytes);
}

}  // namespace tpsim::real
