// Coarse-to-fine grid search of the GEMM parameters against measured times.
#include "calibrate/gemm_fit.hpp"

#include <algorithm>
#include <cmath>

#include "calibrate/csv_table.hpp"

namespace tpsim::calibrate {
namespace {

double gemm_bytes(const model::GemmShape& s) {
  return 2.0 * static_cast<double>(s.m * s.k + s.k * s.n + s.m * s.n);
}

double squared_log_error(const std::vector<GemmSample>& samples, const sim::GpuSpec& gpu, const sim::GemmParams& p) {
  sim::CostProfile profile;
  profile.gemm = p;
  const sim::CostModel cost(gpu, profile);
  double total = 0;
  for (const GemmSample& s : samples) {
    const double err = std::log(cost.gemm_seconds(s.shape, gemm_bytes(s.shape)) / s.seconds);
    total += err * err;
  }
  return total;
}

}  // namespace

GemmFit fit_gemm(const std::vector<GemmSample>& samples, const sim::GpuSpec& gpu, const sim::GemmParams& start) {
  sim::GemmParams best = start;
  double best_error = squared_log_error(samples, gpu, best);
  // Search box: efficiency and hbm_efficiency in (0, 1], overhead in [0, 20 us]; shrink around the best.
  double eff_step = 0.05, hbm_step = 0.05, overhead_step = 1e-6;
  for (int round = 0; round < 6; ++round) {
    const sim::GemmParams center = best;
    for (int i = -10; i <= 10; ++i) {
      for (int j = -10; j <= 10; ++j) {
        for (int k = -10; k <= 10; ++k) {
          sim::GemmParams p = center;
          p.efficiency = center.efficiency + i * eff_step;
          p.hbm_efficiency = center.hbm_efficiency + j * hbm_step;
          p.overhead_s = center.overhead_s + k * overhead_step;
          if (p.efficiency <= 0 || p.efficiency > 1 || p.hbm_efficiency <= 0 || p.hbm_efficiency > 1 ||
              p.overhead_s < 0 || p.overhead_s > 20e-6) {
            continue;
          }
          const double error = squared_log_error(samples, gpu, p);
          if (error < best_error) {
            best_error = error;
            best = p;
          }
        }
      }
    }
    eff_step /= 4;
    hbm_step /= 4;
    overhead_step /= 4;
  }
  GemmFit fit;
  fit.params = best;
  fit.points = samples.size();
  fit.rms_log_error = std::sqrt(best_error / static_cast<double>(std::max<size_t>(1, samples.size())));
  sim::CostProfile profile;
  profile.gemm = best;
  const sim::CostModel cost(gpu, profile);
  for (const GemmSample& s : samples) {
    const double ratio = cost.gemm_seconds(s.shape, gemm_bytes(s.shape)) / s.seconds;
    fit.max_abs_error_pct = std::max(fit.max_abs_error_pct, 100.0 * std::abs(ratio - 1.0));
  }
  return fit;
}

std::vector<GemmSample> read_gemm_table(const std::string& csv_path) {
  const CsvTable table = CsvTable::read_file(csv_path);
  std::vector<GemmSample> samples;
  for (size_t r = 0; r < table.rows(); ++r) {
    GemmSample s;
    s.shape = {static_cast<int64_t>(table.number(r, "m")), static_cast<int64_t>(table.number(r, "n")),
               static_cast<int64_t>(table.number(r, "k"))};
    const double flops =
        2.0 * static_cast<double>(s.shape.m) * static_cast<double>(s.shape.n) * static_cast<double>(s.shape.k);
    s.seconds = flops / (table.number(r, "tflops") * 1e12);
    samples.push_back(s);
  }
  return samples;
}

}  // namespace tpsim::calibrate
