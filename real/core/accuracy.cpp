// Relative errors and sampled GEMM references.
#include "real/core/accuracy.hpp"

#include <cmath>
#include <limits>

#include "real/core/random_values.hpp"

namespace tpsim::real {

double relative_error(const std::vector<double>& ref, const std::vector<double>& got) {
  if (ref.size() != got.size()) return std::numeric_limits<double>::quiet_NaN();
  double diff = 0, norm = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff += (got[i] - ref[i]) * (got[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  if (std::isnan(diff) || std::isnan(norm)) return std::numeric_limits<double>::quiet_NaN();
  if (norm == 0) return diff == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::sqrt(diff / norm);
}

bool within(double relative_error, double tolerance) {
  return !std::isnan(relative_error) && relative_error <= tolerance;
}

std::vector<std::pair<int64_t, int64_t>> sample_positions(int64_t m, int64_t n, int count, uint64_t seed) {
  std::vector<std::pair<int64_t, int64_t>> out = {{0, 0}, {0, n - 1}, {m - 1, 0}, {m - 1, n - 1}};
  for (int i = 0; static_cast<int>(out.size()) < count; ++i) {
    const uint64_t h = mix64(seed ^ mix64(static_cast<uint64_t>(i)));
    out.emplace_back(static_cast<int64_t>(h % static_cast<uint64_t>(m)),
                     static_cast<int64_t>((h >> 32) % static_cast<uint64_t>(n)));
  }
  return out;
}

double sampled_gemm_error(const std::vector<SampledEntry>& entries) {
  std::vector<double> ref, got;
  for (const SampledEntry& e : entries) {
    double dot = 0;
    for (size_t i = 0; i < e.x_row.size() && i < e.w_row.size(); ++i) {
      dot += static_cast<double>(e.x_row[i]) * static_cast<double>(e.w_row[i]);
    }
    ref.push_back(dot);
    got.push_back(e.y);
  }
  return relative_error(ref, got);
}

}  // namespace tpsim::real
