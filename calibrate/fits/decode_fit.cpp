// Least squares over simulated decode runs: each run's time is linear in the per-kernel time and in the
// inverse streaming efficiency, with slopes read off the simulator by moving one value at a time.
#include "calibrate/fits/decode_fit.hpp"

#include <cmath>

#include "base/input_error.hpp"
#include "base/units.hpp"
#include "sim/run/scenario_run.hpp"

namespace tpsim::calibrate {
namespace {

// Moves the probes take: exact for the linear model, large enough to stay clear of rounding.
constexpr double kOverheadProbeSeconds = 1e-6;
constexpr double kInverseEfficiencyProbe = 0.1;

// The profile with the memory-bound regime set to per-kernel time `overhead_s` and efficiency 1 / inverse.
sim::CostProfile with_regime(sim::CostProfile p, double overhead_s, double inverse_efficiency) {
  p.gemm.overhead_s = p.memory.overhead_s = overhead_s;
  p.gemm.hbm_efficiency = p.memory.hbm_efficiency = 1.0 / inverse_efficiency;
  return p;
}

// A run's time at (overhead, inverse efficiency), as intercept + slopes.
struct LinearRun {
  double measured_s = 0;
  double at_origin_s = 0;      // the time at zero per-kernel time and zero inverse efficiency
  double per_overhead = 0;     // seconds per second of per-kernel time: the kernels on the critical path
  double per_inverse_eff = 0;  // seconds per unit of 1 / efficiency: the bytes streamed / HBM bandwidth
};

LinearRun linearise(const Measurement& point, const sim::CostProfile& profile) {
  const double o = profile.gemm.overhead_s, u = 1.0 / profile.gemm.hbm_efficiency;
  const model::Scenario scenario = decode_scenario(point);  // parsed once for the three probes
  const auto predict = [&](double overhead_s, double inverse_efficiency) {
    return predict_decode_seconds(point, scenario, with_regime(profile, overhead_s, inverse_efficiency));
  };
  const double base = predict(o, u);
  LinearRun run;
  run.measured_s = point.median_s;
  run.per_overhead = (predict(o + kOverheadProbeSeconds, u) - base) / kOverheadProbeSeconds;
  run.per_inverse_eff = (predict(o, u + kInverseEfficiencyProbe) - base) / kInverseEfficiencyProbe;
  run.at_origin_s = base - run.per_overhead * o - run.per_inverse_eff * u;
  return run;
}

struct Regime {
  double overhead_s = 0;
  double inverse_efficiency = 1;
};

// Minimises the sum of squared relative errors over `runs` (a 2 x 2 linear system).
Regime least_squares(const std::vector<LinearRun>& runs, const std::string& where) {
  double aa = 0, ab = 0, bb = 0, ar = 0, br = 0;
  for (const LinearRun& r : runs) {
    const double a = r.per_overhead / r.measured_s, b = r.per_inverse_eff / r.measured_s;
    const double rest = 1.0 - r.at_origin_s / r.measured_s;
    aa += a * a;
    ab += a * b;
    bb += b * b;
    ar += a * rest;
    br += b * rest;
  }
  const double det = aa * bb - ab * ab;
  if (!(std::abs(det) > 1e-9 * aa * bb)) {
    throw InputError("decode points " + where +
                     " cannot tell the per-kernel time from the streaming rate (their kernel counts and bytes scale "
                     "together): add runs of another model, batch or TP degree");
  }
  return Regime{(ar * bb - br * ab) / det, (aa * br - ab * ar) / det};
}

std::string origins(const std::vector<const Measurement*>& points) {
  std::string out = points.front()->origin;
  if (points.size() > 1) out += " .. " + points.back()->origin;
  return out;
}

Regime fit_on(const std::vector<const Measurement*>& points, const sim::CostProfile& profile) {
  std::vector<LinearRun> runs;
  runs.reserve(points.size());
  for (const Measurement* p : points) runs.push_back(linearise(*p, profile));
  const std::string where = origins(points);
  const Regime r = least_squares(runs, where);
  if (!(r.overhead_s >= 0) || r.overhead_s > model::kMaxProfileSeconds) {
    throw InputError("decode points " + where + " imply a per-kernel time of " +
                     model::format_number("%.3g", r.overhead_s * 1e6) +
                     " us, outside [0, 1 s]: check each run's model, ranks, collective and implementation");
  }
  if (!(r.inverse_efficiency >= 1)) {
    throw InputError("decode points " + where + " imply a streaming efficiency of " +
                     model::format_number("%.3g", 1.0 / r.inverse_efficiency) +
                     " of the HBM bandwidth, above 1: check each run's model, ranks, collective and implementation");
  }
  return r;
}

double error_pct(const Measurement& point, const sim::CostProfile& profile) {
  return (predict_decode_seconds(point, profile) / point.median_s - 1.0) * 100.0;
}

}  // namespace

model::Scenario decode_scenario(const Measurement& m) {
  std::string y = "name: decode-fit\nmodel: " + m.model + "\nhardware: {gpu: " + m.gpu + ", topology: " + m.topology;
  if (m.power_limit_W > 0) y += ", power_limit_W: " + model::format_number("%.17g", m.power_limit_W);
  y += "}\n";
  if (!m.implementation.empty()) y += "implementation: " + m.implementation + "\n";
  y += "workload: {phase: generate, batch: " + std::to_string(m.batch) +
       ", context_len: " + std::to_string(m.context_len) + ", gen_len: " + std::to_string(m.gen_len) +
       ", dtype: bf16, layers: all, cuda_graphs: " + (m.cuda_graphs ? "true" : "false") + ", whole_model: true}\n";
  y += "parallelism: {tp: " + std::to_string(m.ranks) + "}\n";
  y += "variants: [{name: measured, tp_mode: tp, collective: " + m.collective + "}]\n";
  try {
    return model::parse_scenario(y, "decode point");
  } catch (const InputError& e) {
    throw InputError(m.origin + ": this decode run cannot be simulated: " + e.what());
  }
}

double predict_decode_seconds(const Measurement& point, const sim::CostProfile& profile) {
  return predict_decode_seconds(point, decode_scenario(point), profile);
}

double predict_decode_seconds(const Measurement& point, const model::Scenario& scenario,
                              const sim::CostProfile& profile) {
  try {
    return sim::run_scenario(scenario, {}, &profile).variants.front().metrics.time_s;
  } catch (const InputError& e) {
    throw InputError(point.origin + ": this decode run cannot be simulated: " + e.what());
  }
}

void fit_decode(const std::vector<const Measurement*>& points, ProfileFit& out) {
  if (points.size() < 2) {
    throw InputError("decode point " + points.front()->origin +
                     ": a decode fit needs two runs or more (the per-kernel time and the streaming rate)");
  }
  const Regime r = fit_on(points, out.profile);
  const sim::CostProfile fitted = with_regime(out.profile, r.overhead_s, r.inverse_efficiency);
  ComponentFit c;
  c.name = "decode";
  for (const Measurement* p : points) {
    c.errors.push_back({p->origin, error_pct(*p, fitted)});
    c.max_abs_error_pct = std::max(c.max_abs_error_pct, std::abs(c.errors.back().error_pct));
  }
  if (points.size() >= 4) {
    std::vector<const Measurement*> even, odd;
    for (size_t i = 0; i < points.size(); ++i) (i % 2 == 0 ? even : odd).push_back(points[i]);
    const Regime half = fit_on(even, out.profile);
    const sim::CostProfile on_even = with_regime(out.profile, half.overhead_s, half.inverse_efficiency);
    c.held_out_max_abs_error_pct = 0;
    for (const Measurement* p : odd) {
      c.held_out_max_abs_error_pct = std::max(c.held_out_max_abs_error_pct, std::abs(error_pct(*p, on_even)));
    }
  }
  out.profile = fitted;
  out.fits.push_back(c);
}

}  // namespace tpsim::calibrate
