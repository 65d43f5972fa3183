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

RingFit fit_network_ring(const std::vector<RingSample>& samples, double node_nic_Bps) {
  // An all-reduce ring is two all-gather-like passes: half its time fits the one-pass form.
  std::vector<RingSample> one_pass = samples;
  for (RingSample& s : one_pass) s.seconds /= 2;
  return fit_ring(one_pass, node_nic_Bps);
}

namespace {

double ring_seconds(const sim::TransportParams& p, const RingSample& s, double link_Bps) {
  const double n = s.ranks;
  return (n - 1) * (p.step_latency_s + s.tensor_bytes / (n * link_Bps * p.link_efficiency));
}

double squared_relative_error(const RingRegimes& r, const std::vector<RingSample>& samples, double link_Bps) {
  double total = 0;
  for (const RingSample& s : samples) {
    const double e = ring_regimes_seconds(r, s, link_Bps) / s.seconds - 1.0;
    total += e * e;
  }
  return total;
}

}  // namespace

double ring_regimes_seconds(const RingRegimes& regimes, const RingSample& sample, double link_Bps) {
  const double simple = ring_seconds(regimes.simple, sample, link_Bps);
  return regimes.has_small ? std::min(simple, ring_seconds(regimes.small, sample, link_Bps)) : simple;
}

RingRegimes fit_ring_regimes(const std::vector<RingSample>& samples, double link_Bps) {
  RingRegimes best;
  best.simple = fit_ring(samples, link_Bps).params;
  double best_error = squared_relative_error(best, samples, link_Bps);
  const double one_regime_error = best_error;
  std::vector<RingSample> sorted = samples;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const RingSample& a, const RingSample& b) { return a.tensor_bytes < b.tensor_bytes; });
  for (size_t split = 2; split + 2 <= sorted.size(); ++split) {
    if (sorted[split - 1].tensor_bytes == sorted[split].tensor_bytes) continue;  // split between sizes only
    const std::vector<RingSample> low(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(split));
    const std::vector<RingSample> high(sorted.begin() + static_cast<std::ptrdiff_t>(split), sorted.end());
    RingRegimes candidate;
    candidate.small = fit_ring(low, link_Bps).params;
    candidate.simple = fit_ring(high, link_Bps).params;
    candidate.has_small = candidate.small.step_latency_s > 0 && candidate.small.link_efficiency > 0 &&
                          candidate.simple.link_efficiency > 0;
    if (!candidate.has_small) continue;
    const double error = squared_relative_error(candidate, samples, link_Bps);
    if (error < best_error) {
      best_error = error;
      best = candidate;
    }
  }
  // A second regime must cut the squared error by 10% (and one regime must not already be exact).
  const bool one_is_enough = one_regime_error < 1e-12 * static_cast<double>(samples.size());
  if (best.has_small && (best_error > 0.9 * one_regime_error || one_is_enough)) {
    best = RingRegimes{};
    best.simple = fit_ring(samples, link_Bps).params;
  }
  for (const RingSample& s : samples) {
    best.max_abs_error_pct =
        std::max(best.max_abs_error_pct, 100.0 * std::abs(ring_regimes_seconds(best, s, link_Bps) / s.seconds - 1.0));
  }
  return best;
}

namespace {

// t = latency + x(s) / (link_Bps * efficiency): a relative-error line in x.
RingFit fit_single_step(const std::vector<RingSample>& samples, double link_Bps, const std::string& what,
                        double (*bytes_through_port)(const RingSample&)) {
  if (samples.size() < 2) throw InputError("a " + what + " fit needs at least two measurements");
  std::vector<double> x, t;
  for (const RingSample& s : samples) {
    x.push_back(bytes_through_port(s));
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

}  // namespace

RingFit fit_one_shot(const std::vector<RingSample>& samples, double link_Bps) {
  // Each rank reads the whole tensor from each of its n - 1 peers.
  return fit_single_step(samples, link_Bps, "one-shot",
                         [](const RingSample& s) { return (s.ranks - 1) * s.tensor_bytes; });
}

RingFit fit_two_shot(const std::vector<RingSample>& samples, double link_Bps) {
  // Two equal steps: fit one step (half the time), a 1/n block through each of n - 1 peer ports.
  std::vector<RingSample> halves = samples;
  for (RingSample& s : halves) s.seconds /= 2;
  return fit_single_step(halves, link_Bps, "two-shot",
                         [](const RingSample& s) { return (s.ranks - 1) * s.tensor_bytes / s.ranks; });
}

RingFit fit_copy_step(const std::vector<RingSample>& samples, double link_Bps) {
  return fit_single_step(samples, link_Bps, "copy-engine", [](const RingSample& s) { return s.tensor_bytes; });
}

RingFit fit_nvls(const std::vector<RingSample>& samples, double link_Bps) {
  // Each GPU moves the tensor once each way through the switch.
  return fit_single_step(samples, link_Bps, "NVLS", [](const RingSample& s) { return s.tensor_bytes; });
}

}  // namespace tpsim::calibrate
