// Relative-error linear fits (Eigen QR) of ring, one-shot and NVLS collective times.
#include "calibrate/ring_fit.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "model/input_error.hpp"

namespace tpsim::calibrate {
namespace {

struct Line {
  double intercept = 0;
  double slope = 0;
  double max_abs_error_pct = 0;
};

// Minimises sum(((a + b x - t) / t)^2): least squares on rows [1/t, x/t] against 1, solved by
// Eigen's column-pivoting Householder QR.
Line fit_relative_line(const std::vector<double>& x, const std::vector<double>& t) {
  Eigen::MatrixXd design(static_cast<Eigen::Index>(x.size()), 2);
  const Eigen::VectorXd ones = Eigen::VectorXd::Ones(static_cast<Eigen::Index>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    design(static_cast<Eigen::Index>(i), 0) = 1.0 / t[i];
    design(static_cast<Eigen::Index>(i), 1) = x[i] / t[i];
  }
  const Eigen::Vector2d solution = design.colPivHouseholderQr().solve(ones);
  Line line;
  line.intercept = solution(0);
  line.slope = solution(1);
  for (size_t i = 0; i < x.size(); ++i) {
    line.max_abs_error_pct =
        std::max(line.max_abs_error_pct, 100.0 * std::abs((line.intercept + line.slope * x[i]) / t[i] - 1.0));
  }
  return line;
}

}  // namespace

RingFit fit_ring(const std::vector<RingSample>& samples, double link_Bps) {
  if (samples.size() < 2) throw InputError("a ring fit needs at least two measurements");
  const int n = samples.front().ranks;
  std::vector<double> x, t;
  for (const RingSample& s : samples) {
    if (s.ranks != n) throw InputError("a ring fit needs samples of one rank count");
    x.push_back(s.tensor_bytes);
    t.push_back(s.seconds);
  }
  // t = (n-1) latency + (n-1)/n S / (B eff): the intercept and slope give latency and efficiency.
  const Line line = fit_relative_line(x, t);
  RingFit fit;
  fit.points = samples.size();
  fit.params.step_latency_s = line.intercept / (n - 1);
  fit.params.link_efficiency = (n - 1) / (n * link_Bps * line.slope);
  fit.max_abs_error_pct = line.max_abs_error_pct;
  return fit;
}

RingFit fit_one_shot(const std::vector<RingSample>& samples, double link_Bps) {
  if (samples.size() < 2) throw InputError("a one-shot fit needs at least two measurements");
  std::vector<double> x, t;
  for (const RingSample& s : samples) {
    x.push_back((s.ranks - 1) * s.tensor_bytes);
    t.push_back(s.seconds);
  }
  const Line line = fit_relative_line(x, t);
  RingFit fit;
  fit.points = samples.size();
  fit.params.step_latency_s = line.intercept;
  fit.params.link_efficiency = 1.0 / (link_Bps * line.slope);
  fit.max_abs_error_pct = line.max_abs_error_pct;
  return fit;
}

RingFit fit_nvls(const std::vector<RingSample>& samples, double link_Bps) {
  if (samples.size() < 2) throw InputError("an NVLS fit needs at least two measurements");
  std::vector<double> x, t;
  for (const RingSample& s : samples) {
    x.push_back(s.tensor_bytes);
    t.push_back(s.seconds);
  }
  const Line line = fit_relative_line(x, t);
  RingFit fit;
  fit.points = samples.size();
  fit.params.step_latency_s = line.intercept;
  fit.params.link_efficiency = 1.0 / (link_Bps * line.slope);
  fit.max_abs_error_pct = line.max_abs_error_pct;
  return fit;
}

}  // namespace tpsim::calibrate
