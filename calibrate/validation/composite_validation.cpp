// Per-point errors, summaries, tables and the held-out split.
#include "calibrate/validation/composite_validation.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/input_error.hpp"
#include "base/names.hpp"
#include "base/units.hpp"
#include "model/graph/op.hpp"

namespace tpsim::calibrate {
namespace {

std::string configuration(const Measurement& m) {
  const std::string shape = std::to_string(m.m) + "x" + std::to_string(m.n) + "x" + std::to_string(m.k);
  if (m.kind == "overlap") {
    return "overlap " + shape + " + " + m.pattern + " " + model::human_bytes(m.bytes);
  }
  if (m.kind == "async_tp") {
    return m.pattern + " " + shape + " tp" + std::to_string(m.ranks) + " " + std::to_string(m.chunks) + " chunks " +
           m.transport;
  }
  return "dtp " + shape + " tp" + std::to_string(m.ranks) + " " + std::to_string(m.modules) + " modules delta " +
         std::to_string(m.delta);
}

// The size a single-op point is ordered by within its group.
double size_of(const Measurement& m) {
  return m.kind == "gemm" ? model::gemm_flops({m.m, m.n, m.k}) : m.bytes;
}

std::string group_of(const Measurement& m) {
  if (m.kind == "collective") return m.gpu + " collective " + m.collective + " " + std::to_string(m.ranks);
  return m.gpu + " " + m.kind + " " + m.path + " " + m.dtype;
}

}  // namespace

CompositeValidation validate_composites(const std::vector<Measurement>& measurements,
                                        const std::function<sim::CostModel(const std::string& gpu)>& cost_for,
                                        const sim::EngineOptions& options) {
  CompositeValidation v;
  for (const Measurement& m : measurements) {
    if (!m.is_composite()) continue;
    const sim::CostModel cost = cost_for(m.gpu);
    std::string why = m.correct ? composite_not_modelled(m, cost) : "failed its correctness check when measured";
    if (!why.empty()) {
      v.skipped.emplace_back(m.origin, why);
      continue;
    }
    CompositeRow row{m, predict_composite(m, cost, options), 0, 0};
    row.time_error_pct = 100 * (row.predicted.time_s / m.median_s - 1);
    row.speedup_error_pp = 100 * (row.predicted.speedup() - m.speedup());
    v.rows.push_back(row);
  }
  for (const CompositeRow& r : v.rows) {
    v.mean_abs_time_error_pct += std::abs(r.time_error_pct) / static_cast<double>(v.rows.size());
    v.mean_abs_speedup_error_pp += std::abs(r.speedup_error_pp) / static_cast<double>(v.rows.size());
    v.max_abs_time_error_pct = std::max(v.max_abs_time_error_pct, std::abs(r.time_error_pct));
    v.max_abs_speedup_error_pp = std::max(v.max_abs_speedup_error_pp, std::abs(r.speedup_error_pp));
  }
  return v;
}

std::string composite_table(const CompositeValidation& v) {
  std::string out =
      "| configuration | measured us | predicted us | error | measured speedup | predicted speedup | error (pp) |\n"
      "|---|---|---|---|---|---|---|\n";
  for (const CompositeRow& r : v.rows) {
    out += "| " + configuration(r.measured) + " | " + model::format_number("%.1f", r.measured.median_s * 1e6) + " | " +
           model::format_number("%.1f", r.predicted.time_s * 1e6) + " | " +
           model::format_number("%+.1f%%", r.time_error_pct) + " | " +
           model::format_number("%.3f", r.measured.speedup()) + " | " +
           model::format_number("%.3f", r.predicted.speedup()) + " | " +
           model::format_number("%+.1f", r.speedup_error_pp) + " |\n";
  }
  out += "\n" + std::to_string(v.rows.size()) + " composite points: time error mean " +
         model::format_number("%.1f%%", v.mean_abs_time_error_pct) + ", max " +
         model::format_number("%.1f%%", v.max_abs_time_error_pct) + "; speedup error mean " +
         model::format_number("%.1f", v.mean_abs_speedup_error_pp) + " pp, max " +
         model::format_number("%.1f", v.max_abs_speedup_error_pp) + " pp\n";
  for (const auto& [origin, why] : v.skipped) out += "skipped " + origin + ": " + why + "\n";
  return out;
}

nlohmann::ordered_json composite_json(const CompositeValidation& v) {
  nlohmann::ordered_json j;
  j["points"] = nlohmann::ordered_json::array();
  for (const CompositeRow& r : v.rows) {
    nlohmann::ordered_json p;
    p["origin"] = r.measured.origin;
    p["configuration"] = configuration(r.measured);
    p["measured_s"] = r.measured.median_s;
    p["predicted_s"] = r.predicted.time_s;
    p["time_error_pct"] = r.time_error_pct;
    p["measured_baseline_s"] = r.measured.baseline_s;
    p["predicted_baseline_s"] = r.predicted.baseline_s;
    p["measured_speedup"] = r.measured.speedup();
    p["predicted_speedup"] = r.predicted.speedup();
    p["speedup_error_pp"] = r.speedup_error_pp;
    j["points"].push_back(p);
  }
  j["mean_abs_time_error_pct"] = v.mean_abs_time_error_pct;
  j["max_abs_time_error_pct"] = v.max_abs_time_error_pct;
  j["mean_abs_speedup_error_pp"] = v.mean_abs_speedup_error_pp;
  j["max_abs_speedup_error_pp"] = v.max_abs_speedup_error_pp;
  j["skipped"] = nlohmann::ordered_json::array();
  for (const auto& [origin, why] : v.skipped) j["skipped"].push_back({{"origin", origin}, {"why", why}});
  return j;
}

Holdout parse_holdout(const std::string& text) {
  if (const std::optional<Holdout> holdout = value_named(kHoldoutNames, text)) return *holdout;
  throw InputError("--holdout " + text + ": valid: " + model::join_names(names_of(kHoldoutNames)));
}

std::vector<Measurement> fit_set(const std::vector<Measurement>& measurements, Holdout holdout) {
  std::map<std::string, std::vector<const Measurement*>> groups;
  for (const Measurement& m : measurements) {
    if (!m.is_composite()) groups[group_of(m)].push_back(&m);
  }
  std::vector<Measurement> out;
  for (auto& [group, points] : groups) {
    // Stable: equal sizes keep file order, so the split is the same on every run.
    std::stable_sort(points.begin(), points.end(),
                     [](const Measurement* a, const Measurement* b) { return size_of(*a) < size_of(*b); });
    const size_t keep = holdout == Holdout::kSize ? (points.size() + 1) / 2 : points.size();
    for (size_t i = 0; i < keep; ++i) out.push_back(*points[i]);
  }
  return out;
}

}  // namespace tpsim::calibrate
