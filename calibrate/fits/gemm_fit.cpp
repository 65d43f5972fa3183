// Levenberg-Marquardt fit (Eigen) of the GEMM parameters against measured times.
#include "calibrate/fits/gemm_fit.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <cmath>
#include <unsupported/Eigen/NonLinearOptimization>
#include <unsupported/Eigen/NumericalDiff>

#include "base/input_error.hpp"

namespace tpsim::calibrate {
namespace {

// The solver works on unbounded axes: efficiency and hbm_efficiency through a logistic, the
// overhead (in microseconds) through a softplus.
double logistic(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}
double logit(double p) {
  return std::log(p / (1.0 - p));
}
double softplus(double x) {
  return x > 30 ? x : std::log1p(std::exp(x));
}
double softplus_inverse(double y) {
  return y > 30 ? y : std::log(std::expm1(y));
}

sim::GemmParams params_of(const Eigen::VectorXd& x, const sim::GemmParams& base) {
  sim::GemmParams p = base;
  p.efficiency = logistic(x(0));
  p.hbm_efficiency = logistic(x(1));
  p.overhead_s = softplus(x(2)) * 1e-6;
  return p;
}

// Residuals ln(predicted / measured), one per sample.
struct LogErrorFunctor {
  using Scalar = double;
  using InputType = Eigen::VectorXd;
  using ValueType = Eigen::VectorXd;
  using JacobianType = Eigen::MatrixXd;
  enum { InputsAtCompileTime = Eigen::Dynamic, ValuesAtCompileTime = Eigen::Dynamic };

  const std::vector<GemmSample>* samples = nullptr;
  const sim::GpuSpec* gpu = nullptr;
  sim::GemmParams base;

  int inputs() const { return 3; }
  int values() const { return static_cast<int>(samples->size()); }
  int operator()(const Eigen::VectorXd& x, Eigen::VectorXd& residuals) const {
    sim::CostProfile profile;
    profile.gemm = params_of(x, base);
    const sim::CostModel cost(*gpu, profile);
    for (size_t i = 0; i < samples->size(); ++i) {
      const GemmSample& s = (*samples)[i];
      residuals(static_cast<Eigen::Index>(i)) = std::log(cost.gemm_seconds(s.shape, s.hbm_bytes()) / s.seconds);
    }
    return 0;
  }
};

double squared_log_error(const std::vector<GemmSample>& samples, const sim::GpuSpec& gpu, const sim::GemmParams& p) {
  sim::CostProfile profile;
  profile.gemm = p;
  const sim::CostModel cost(gpu, profile);
  double total = 0;
  for (const GemmSample& s : samples) {
    const double err = std::log(cost.gemm_seconds(s.shape, s.hbm_bytes()) / s.seconds);
    total += err * err;
  }
  return total;
}

}  // namespace

GemmFit fit_gemm(const std::vector<GemmSample>& samples, const sim::GpuSpec& gpu, const sim::GemmParams& start) {
  if (samples.size() < 3) {
    throw InputError("a GEMM fit needs at least 3 measured shapes, got " + std::to_string(samples.size()));
  }
  // The roofline's max() makes the error surface piecewise smooth, so Levenberg-Marquardt (numerical
  // Jacobian) runs from a few fixed starts and the best result is kept: deterministic.
  sim::GemmParams best = start;
  double best_error = squared_log_error(samples, gpu, best);
  const std::vector<std::array<double, 3>> starts = {
      {start.efficiency, start.hbm_efficiency, start.overhead_s * 1e6}, {0.6, 0.6, 5.0}, {0.9, 0.9, 0.5}};
  for (const auto& s : starts) {
    LogErrorFunctor functor;
    functor.samples = &samples;
    functor.gpu = &gpu;
    functor.base = start;
    Eigen::NumericalDiff<LogErrorFunctor> numeric(functor);
    Eigen::LevenbergMarquardt<Eigen::NumericalDiff<LogErrorFunctor>> solver(numeric);
    Eigen::VectorXd x(3);
    // Starts are kept off 0 and 1, where the logistic's inverse is infinite.
    x << logit(std::clamp(s[0], 0.01, 0.99)), logit(std::clamp(s[1], 0.01, 0.99)),
        softplus_inverse(std::max(s[2], 1e-3));
    solver.minimize(x);
    const sim::GemmParams candidate = params_of(x, start);
    const double error = squared_log_error(samples, gpu, candidate);
    if (error < best_error) {
      best_error = error;
      best = candidate;
    }
  }
  GemmFit fit;
  fit.params = best;
  fit.points = samples.size();
  fit.rms_log_error = std::sqrt(best_error / static_cast<double>(samples.size()));
  sim::CostProfile profile;
  profile.gemm = best;
  const sim::CostModel cost(gpu, profile);
  for (const GemmSample& s : samples) {
    const double ratio = cost.gemm_seconds(s.shape, s.hbm_bytes()) / s.seconds;
    fit.max_abs_error_pct = std::max(fit.max_abs_error_pct, 100.0 * std::abs(ratio - 1.0));
  }
  return fit;
}

}  // namespace tpsim::calibrate
