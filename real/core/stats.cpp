// Quantiles by linear interpolation between order statistics.
#include "real/core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace tpsim::real {

double quantile(std::vector<double> samples, double q) {
  if (samples.empty()) throw std::invalid_argument("quantile of no samples");
  if (q < 0 || q > 1) throw std::invalid_argument("quantile outside [0, 1]");
  std::sort(samples.begin(), samples.end());
  const double position = q * static_cast<double>(samples.size() - 1);
  const auto below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, samples.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return samples[below] + fraction * (samples[above] - samples[below]);
}

Summary summarize(const std::vector<double>& samples) {
  Summary s;
  s.samples = static_cast<int>(samples.size());
  s.median = quantile(samples, 0.5);
  s.p10 = quantile(samples, 0.1);
  s.p90 = quantile(samples, 0.9);
  s.min = *std::min_element(samples.begin(), samples.end());
  s.max = *std::max_element(samples.begin(), samples.end());
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  return s;
}

std::vector<double> elementwise_max(const std::vector<std::vector<double>>& per_rank) {
  if (per_rank.empty()) return {};
  std::vector<double> out = per_rank.front();
  for (const std::vector<double>& series : per_rank) {
    if (series.size() != out.size()) throw std::invalid_argument("ranks timed different numbers of samples");
    for (size_t i = 0; i < out.size(); ++i) out[i] = std::max(out[i], series[i]);
  }
  return out;
}

}  // namespace tpsim::real
