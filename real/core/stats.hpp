// Summary statistics of timing samples: median, p10, p90 and the relative spread (p90 - p10) / median.
// Percentiles interpolate linearly between order statistics (NumPy's default "linear" method).
#pragma once

#include <vector>

namespace tpsim::real {

struct Summary {
  double median = 0;
  double p10 = 0;
  double p90 = 0;
  double min = 0;
  double max = 0;
  double mean = 0;
  int samples = 0;

  double spread() const { return median > 0 ? (p90 - p10) / median : 0; }
};

// The q-th quantile (0 <= q <= 1) of the samples; throws std::invalid_argument on no samples.
double quantile(std::vector<double> samples, double q);

Summary summarize(const std::vector<double>& samples);

// Element-wise maximum of per-rank sample series (a collective ends when its slowest rank does).
std::vector<double> elementwise_max(const std::vector<std::vector<double>>& per_rank);

}  // namespace tpsim::real
