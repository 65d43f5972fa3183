// What every component fit shares: its error at each point and held out (fitted on the even points,
// evaluated on the odd ones), and the small helpers that turn measurements into fitter samples.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "base/input_error.hpp"
#include "base/measurement.hpp"
#include "calibrate/fits/ring_fit.hpp"
#include "calibrate/profile/profile_fit.hpp"
#include "sim/cost/collective_time.hpp"

namespace tpsim::calibrate {

// Each point's rank count, bytes and time, as the collective fitters take them (with its ring steps:
// an all-reduce ring runs twice an all-gather's), and `torch_host_s` as the host time inside the times of
// points timed one call at a time through torch.distributed (0: fits of the per-call constant itself).
inline std::vector<RingSample> ring_samples(const std::vector<const Measurement*>& points, double torch_host_s = 0) {
  std::vector<RingSample> out;
  for (const Measurement* m : points) {
    const bool all_reduce = m->collective == "allreduce";
    out.push_back({m->ranks, m->bytes, m->median_s,
                   all_reduce ? sim::ring_step_count(model::CollectiveKind::kAllReduce, m->ranks) : 0,
                   model::collective_kind_named(m->collective).value_or(model::CollectiveKind::kAllGather),
                   m->host_in_time() ? torch_host_s : 0.0});
  }
  return out;
}

// A peer copy's bytes as they would move over the GPU's NVLink of `link_Bps`: scaled by the nominal rate
// of the link it ran over when the point states one, so that copies over links of other rates share one
// line.
inline double copy_bytes_at_link(const Measurement& m, double link_Bps) {
  return m.spec_GBps > 0 ? m.bytes * link_Bps / (m.spec_GBps * 1e9) : m.bytes;
}

// A peer copy's time as the copy-engine fits and the validation report predict it: the copy step's
// closed form (sim/cost/collective_time.hpp) over the GPU's NVLink.
inline double copy_seconds(const sim::TransportParams& copy_engine, const Measurement& m, double link_Bps) {
  return sim::copy_step_seconds(copy_engine, copy_bytes_at_link(m, link_Bps), link_Bps);
}

// How collective points' algorithm and protocol are known: as their sources state them, or inferred (NCCL's choice
// from its tuner, or from another source's statement; each point's provenance says), or not stated.
inline std::string algorithm_basis(const std::vector<const Measurement*>& points) {
  size_t collectives = 0, inferred = 0, unstated = 0, protocol_unstated = 0;
  for (const Measurement* m : points) {
    if (m->kind != "collective") continue;
    ++collectives;
    const bool algorithm_inferred =
        m->provenance.contains("nccl_choice") || m->provenance.value("algorithm", "").rfind("inferred", 0) == 0;
    if (algorithm_inferred) ++inferred;
    if (m->algorithm == "unknown") ++unstated;
    const bool nccl = m->algorithm != "one_shot" && m->algorithm != "two_shot" && m->algorithm != "multimem";
    if (nccl && m->protocol == "unknown") ++protocol_unstated;  // NCCL's protocols: custom kernels have none
  }
  if (collectives == 0) return "";
  std::string text;
  const auto add = [&](const std::string& part) { text += (text.empty() ? "" : "; ") + part; };
  const auto of = [&](size_t n) { return n == collectives ? std::string("all") : std::to_string(n); };
  if (inferred > 0) add("algorithm inferred for " + of(inferred) + " of the points, as each one's provenance says");
  if (unstated > 0) add("algorithm not stated for " + of(unstated) + ": NCCL's choice, taken as this section's");
  if (inferred + unstated == 0) add("algorithm as their sources state");
  if (inferred + unstated > 0 && inferred + unstated < collectives) add("the others' as their sources state");
  if (protocol_unstated > 0) add("protocol not stated for " + of(protocol_unstated));
  return text;
}

// Fits with `fit` on all points and on the even ones; `predict(params, i)` gives point i's time. A fit
// the points cannot support is an InputError naming them (file:line); a held-out fit the even points
// cannot support leaves the held-out error unset.
template <typename Params>
ComponentFit measure(const std::string& name, const std::vector<const Measurement*>& points,
                     const std::function<Params(const std::vector<size_t>&)>& fit,
                     const std::function<double(const Params&, size_t)>& predict, Params* fitted) {
  std::vector<size_t> all(points.size()), even, odd;
  for (size_t i = 0; i < points.size(); ++i) {
    all[i] = i;
    (i % 2 == 0 ? even : odd).push_back(i);
  }
  try {
    *fitted = fit(all);
  } catch (const InputError& e) {
    std::string origins;
    for (size_t i = 0; i < points.size() && i < 3; ++i) origins += (i ? ", " : "") + points[i]->origin;
    if (points.size() > 3) origins += " and " + std::to_string(points.size() - 3) + " more";
    throw InputError(origins + ": the " + name + " fit: " + e.what());
  }
  ComponentFit c;
  c.name = name;
  c.basis = algorithm_basis(points);
  for (size_t i = 0; i < points.size(); ++i) {
    const double error = 100.0 * (predict(*fitted, i) / points[i]->median_s - 1.0);
    c.errors.push_back({points[i]->origin, error});
    c.max_abs_error_pct = std::max(c.max_abs_error_pct, std::abs(error));
  }
  if (points.size() >= 4) {
    Params held;
    try {
      held = fit(even);
    } catch (const InputError&) {
      return c;  // the even points alone cannot be fitted: no held-out error
    }
    c.held_out_max_abs_error_pct = 0;
    for (size_t i : odd) {
      c.held_out_max_abs_error_pct =
          std::max(c.held_out_max_abs_error_pct, std::abs(100.0 * (predict(held, i) / points[i]->median_s - 1.0)));
    }
  }
  return c;
}

// A latency and an efficiency are only told apart by at least two message sizes.
inline bool two_sizes(const std::vector<const Measurement*>& points) {
  for (const Measurement* m : points) {
    if (m->bytes != points.front()->bytes) return true;
  }
  return false;
}

// The samples at `index`, in its order: what a fit on part of the points takes.
template <typename Sample>
std::vector<Sample> subset(const std::vector<Sample>& samples, const std::vector<size_t>& index) {
  std::vector<Sample> out;
  out.reserve(index.size());
  for (size_t i : index) out.push_back(samples[i]);
  return out;
}

}  // namespace tpsim::calibrate
