// Relative-error linear fits (Eigen QR) of ring, one-shot and NVLS collective times.
#include "calibrate/fits/ring_fit.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "base/input_error.hpp"
#include "sim/cost/collective_time.hpp"

namespace tpsim::calibrate {
namespace {

// Minimises sum(((offset_i + row_i . p) - t_i) / t_i)^2 with every entry of p non-negative (latencies
// and inverse efficiencies): column-pivoting Householder QR on the free columns; the most negative
// coefficient is fixed at 0 and the rest refitted, until none is negative (an active-set descent).
Eigen::VectorXd relative_nonnegative_fit(const Eigen::MatrixXd& rows, const Eigen::VectorXd& offsets,
                                         const Eigen::VectorXd& t) {
  const Eigen::Index cols = rows.cols();
  std::vector<bool> free(static_cast<size_t>(cols), true);
  Eigen::VectorXd p = Eigen::VectorXd::Zero(cols);
  const Eigen::VectorXd target = (t - offsets).cwiseQuotient(t);
  for (;;) {
    std::vector<Eigen::Index> index;
    for (Eigen::Index c = 0; c < cols; ++c) {
      if (free[static_cast<size_t>(c)]) index.push_back(c);
    }
    p.setZero();
    if (index.empty()) return p;
    Eigen::MatrixXd design(rows.rows(), static_cast<Eigen::Index>(index.size()));
    for (Eigen::Index i = 0; i < rows.rows(); ++i) {
      for (size_t j = 0; j < index.size(); ++j) design(i, static_cast<Eigen::Index>(j)) = rows(i, index[j]) / t(i);
    }
    const Eigen::VectorXd solution = design.colPivHouseholderQr().solve(target);
    Eigen::Index worst = -1;
    double lowest = 0;
    for (size_t j = 0; j < index.size(); ++j) {
      p(index[j]) = solution(static_cast<Eigen::Index>(j));
      if (solution(static_cast<Eigen::Index>(j)) < lowest) {
        lowest = solution(static_cast<Eigen::Index>(j));
        worst = index[j];
      }
    }
    if (worst < 0) return p;
    free[static_cast<size_t>(worst)] = false;
  }
}

// One ring line: its call latency (fitted or given), step latency and 1 / efficiency.
struct RingLine {
  double call_latency_s = 0;
  double step_latency_s = 0;
  double inverse_efficiency = 0;
  bool call_latency_fitted = false;
};

size_t step_counts(const std::vector<RingSample>& samples) {
  std::set<int> counts;
  for (const RingSample& s : samples) counts.insert(ring_steps(s));
  return counts.size();
}

// What each port carries per ring step (sim/cost/collective_time.hpp): S / n.
double ring_port_bytes(const RingSample& s) {
  return sim::port_bytes(sim::ring_pattern(ring_steps(s), s.tensor_bytes, s.ranks));
}

// t = c + steps (L + S / (n B) k); c is fitted when the samples hold two step counts (and `fit_call`),
// else given. Empty when the times do not grow with the size (no positive efficiency fits).
std::optional<RingLine> fit_ring_line(const std::vector<RingSample>& samples, double link_Bps, double call_latency_s,
                                      bool fit_call) {
  const bool with_call = fit_call && step_counts(samples) >= 2;
  const auto n = static_cast<Eigen::Index>(samples.size());
  Eigen::MatrixXd rows(n, with_call ? 3 : 2);
  Eigen::VectorXd offsets(n), t(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const RingSample& s = samples[static_cast<size_t>(i)];
    const double steps = ring_steps(s);
    rows(i, 0) = steps;
    rows(i, 1) = steps * ring_port_bytes(s) / link_Bps;
    if (with_call) rows(i, 2) = 1;
    offsets(i) = with_call ? 0 : call_latency_s + s.framework_s;
    t(i) = s.seconds;
  }
  const Eigen::VectorXd p = relative_nonnegative_fit(rows, offsets, t);
  if (!(p(1) > 0)) return std::nullopt;
  return RingLine{with_call ? p(2) : call_latency_s, p(0), p(1), with_call};
}

sim::TransportParams transport_of(const RingLine& line) {
  return {line.step_latency_s, 1.0 / line.inverse_efficiency};
}

double squared_relative_error(const RingRegimes& r, const std::vector<RingSample>& samples, double link_Bps) {
  double total = 0;
  for (const RingSample& s : samples) {
    const double e = ring_regimes_seconds(r, s, link_Bps) / s.seconds - 1.0;
    total += e * e;
  }
  return total;
}

void check_two_points(const std::vector<RingSample>& samples, const std::string& what) {
  if (samples.size() < 2) throw InputError("a " + what + " fit needs at least two measurements");
}

// Each ring step's message: the tensor over the ranks. Its size, not the tensor's, decides which
// protocol regime is faster, whatever the rank count.
double step_message_bytes(const RingSample& s) {
  return sim::ring_pattern(ring_steps(s), s.tensor_bytes, s.ranks).message_bytes;
}

}  // namespace

double ring_seconds(const sim::TransportParams& p, const RingSample& s, double link_Bps, double call_latency_s) {
  return sim::ring_seconds(p, ring_steps(s), s.tensor_bytes, s.ranks, link_Bps, call_latency_s) + s.framework_s;
}

RingFit fit_ring(const std::vector<RingSample>& samples, double link_Bps, double call_latency_s) {
  check_two_points(samples, "ring");
  const std::optional<RingLine> line = fit_ring_line(samples, link_Bps, call_latency_s, false);
  if (!line) throw InputError("a ring fit needs times that grow with the message size; these do not");
  RingFit fit;
  fit.points = samples.size();
  fit.params = transport_of(*line);
  for (const RingSample& s : samples) {
    fit.max_abs_error_pct =
        std::max(fit.max_abs_error_pct,
                 100.0 * std::abs(ring_seconds(fit.params, s, link_Bps, call_latency_s) / s.seconds - 1.0));
  }
  return fit;
}

RingCallFit fit_ring_and_call(const std::vector<RingSample>& samples, double link_Bps, double step_latency_s) {
  check_two_points(samples, "ring");
  RingCallFit out;
  if (step_counts(samples) >= 2) {
    const std::optional<RingLine> line = fit_ring_line(samples, link_Bps, 0, true);
    if (!line) throw InputError("a ring fit needs times that grow with the message size; these do not");
    out.params = transport_of(*line);
    out.call_latency_s = line->call_latency_s;
    out.step_latency_fitted = true;
    return out;
  }
  // t = c + steps L0 + steps S / (n B) k: c and k fitted, L0 given.
  const auto n = static_cast<Eigen::Index>(samples.size());
  Eigen::MatrixXd rows(n, 2);
  Eigen::VectorXd offsets(n), t(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const RingSample& s = samples[static_cast<size_t>(i)];
    const double steps = ring_steps(s);
    rows(i, 0) = 1;
    rows(i, 1) = steps * ring_port_bytes(s) / link_Bps;
    offsets(i) = steps * step_latency_s;
    t(i) = s.seconds;
  }
  const Eigen::VectorXd p = relative_nonnegative_fit(rows, offsets, t);
  if (!(p(1) > 0)) throw InputError("a ring fit needs times that grow with the message size; these do not");
  out.params = {step_latency_s, 1.0 / p(1)};
  out.call_latency_s = p(0);
  return out;
}

RingFit fit_network_ring(const std::vector<RingSample>& samples, double node_nic_Bps, double call_latency_s) {
  std::vector<RingSample> all_reduces = samples;  // two all-gather-like passes each
  for (RingSample& s : all_reduces) s.steps = sim::ring_step_count(model::CollectiveKind::kAllReduce, s.ranks);
  return fit_ring(all_reduces, node_nic_Bps, call_latency_s);
}

double ring_regimes_seconds(const RingRegimes& regimes, const RingSample& sample, double link_Bps) {
  const double simple = ring_seconds(regimes.simple, sample, link_Bps);
  return regimes.call_latency_s +
         (regimes.has_small ? std::min(simple, ring_seconds(regimes.small, sample, link_Bps)) : simple);
}

RingRegimes fit_ring_regimes(const std::vector<RingSample>& samples, double link_Bps, double call_latency_s) {
  check_two_points(samples, "ring");
  // One regime: one line through every sample (the call latency with it where step counts differ).
  const std::optional<RingLine> single = fit_ring_line(samples, link_Bps, call_latency_s, true);
  if (!single) throw InputError("a ring fit needs times that grow with the message size; these do not");
  const auto one_regime = [&] {
    RingRegimes r;
    r.simple = transport_of(*single);
    r.call_latency_s = single->call_latency_s;
    r.call_latency_fitted = single->call_latency_fitted;
    return r;
  };
  RingRegimes best = one_regime();
  double best_error = squared_relative_error(best, samples, link_Bps);
  const double one_regime_error = best_error;
  std::vector<RingSample> sorted = samples;
  std::stable_sort(sorted.begin(), sorted.end(), [](const RingSample& a, const RingSample& b) {
    return step_message_bytes(a) < step_message_bytes(b);
  });
  for (size_t split = 2; split + 2 <= sorted.size(); ++split) {
    if (step_message_bytes(sorted[split - 1]) == step_message_bytes(sorted[split])) continue;  // between sizes only
    const std::vector<RingSample> low(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(split));
    const std::vector<RingSample> high(sorted.begin() + static_cast<std::ptrdiff_t>(split), sorted.end());
    // The call latency shows against the small messages' line, where latency dominates.
    const std::optional<RingLine> small = fit_ring_line(low, link_Bps, call_latency_s, true);
    if (!small) continue;
    const std::optional<RingLine> simple = fit_ring_line(high, link_Bps, small->call_latency_s, false);
    if (!simple) continue;
    RingRegimes candidate;
    candidate.small = transport_of(*small);
    candidate.simple = transport_of(*simple);
    candidate.has_small = true;
    candidate.call_latency_s = small->call_latency_s;
    candidate.call_latency_fitted = small->call_latency_fitted;
    const double error = squared_relative_error(candidate, samples, link_Bps);
    if (error < best_error) {
      best_error = error;
      best = candidate;
    }
  }
  // A second regime must cut the squared error by 10% (and one regime must not already be exact).
  const bool one_is_enough = one_regime_error < 1e-12 * static_cast<double>(samples.size());
  if (best.has_small && (best_error > 0.9 * one_regime_error || one_is_enough)) best = one_regime();
  for (const RingSample& s : samples) {
    best.max_abs_error_pct =
        std::max(best.max_abs_error_pct, 100.0 * std::abs(ring_regimes_seconds(best, s, link_Bps) / s.seconds - 1.0));
  }
  return best;
}

namespace {

// A sample's steps as a single-step algorithm runs them (two alike steps for two-shot).
using PatternOf = sim::StepPattern (*)(const RingSample&);

// t = c + steps (latency + x / (link_Bps * efficiency)), x the bytes through each port per step of the
// sample's pattern: a relative-error line in x for one step's time, c given.
RingFit fit_single_step(const std::vector<RingSample>& samples, double link_Bps, const std::string& what,
                        PatternOf pattern_of, double call_latency_s = 0) {
  if (samples.size() < 2) throw InputError("a " + what + " fit needs at least two measurements");
  const auto n = static_cast<Eigen::Index>(samples.size());
  Eigen::MatrixXd rows(n, 2);
  Eigen::VectorXd offsets(n), t(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const RingSample& s = samples[static_cast<size_t>(i)];
    const sim::StepPattern pattern = pattern_of(s);
    rows(i, 0) = 1;
    rows(i, 1) = sim::port_bytes(pattern);
    offsets(i) = (call_latency_s + s.framework_s) / pattern.steps;
    t(i) = s.seconds / pattern.steps;
  }
  const Eigen::VectorXd p = relative_nonnegative_fit(rows, offsets, t);
  if (!(p(1) > 0)) throw InputError("a " + what + " fit needs times that grow with the message size; these do not");
  RingFit fit;
  fit.points = samples.size();
  fit.params.step_latency_s = p(0);
  fit.params.link_efficiency = 1.0 / (link_Bps * p(1));
  for (const RingSample& s : samples) {
    const double predicted = sim::pattern_seconds(pattern_of(s), fit.params, link_Bps, call_latency_s) + s.framework_s;
    fit.max_abs_error_pct = std::max(fit.max_abs_error_pct, 100.0 * std::abs(predicted / s.seconds - 1.0));
  }
  return fit;
}

}  // namespace

RingFit fit_one_shot(const std::vector<RingSample>& samples, double link_Bps) {
  return fit_single_step(samples, link_Bps, "one-shot", [](const RingSample& s) {
    return sim::direct_pattern(model::CollectiveKind::kAllReduce, s.tensor_bytes, s.ranks);
  });
}

RingFit fit_two_shot(const std::vector<RingSample>& samples, double link_Bps) {
  return fit_single_step(samples, link_Bps, "two-shot",
                         [](const RingSample& s) { return sim::two_shot_pattern(s.tensor_bytes, s.ranks); });
}

RingFit fit_copy_step(const std::vector<RingSample>& samples, double link_Bps) {
  return fit_single_step(samples, link_Bps, "copy-engine",
                         [](const RingSample& s) { return sim::one_peer_pattern(s.tensor_bytes); });
}

RingFit fit_multimem(const std::vector<RingSample>& samples, double link_Bps) {
  return fit_single_step(samples, link_Bps, "multimem",
                         [](const RingSample& s) { return sim::multimem_pattern(s.kind, s.tensor_bytes, s.ranks); });
}

RingFit fit_nvls(const std::vector<RingSample>& samples, double link_Bps, double call_latency_s) {
  return fit_single_step(
      samples, link_Bps, "NVLS", [](const RingSample& s) { return sim::nvls_pattern(s.tensor_bytes, s.ranks); },
      call_latency_s);
}

}  // namespace tpsim::calibrate
