// Predicted against measured for composite measurements (overlap pairs, async-TP pipelines, DTP
// chains): time error in percent and speedup error in percentage points, per point and summarised;
// and the deterministic split of a measurement set into what a held-out profile is fitted on.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "base/enum_names.hpp"
#include "calibrate/validation/composite_model.hpp"

namespace tpsim::calibrate {

struct CompositeRow {
  Measurement measured;
  CompositePrediction predicted;
  double time_error_pct = 0;    // 100 (predicted / measured - 1)
  double speedup_error_pp = 0;  // 100 (predicted speedup - measured speedup)
};

struct CompositeValidation {
  std::vector<CompositeRow> rows;
  std::vector<std::pair<std::string, std::string>> skipped;  // origin, why
  double mean_abs_time_error_pct = 0;
  double max_abs_time_error_pct = 0;
  double mean_abs_speedup_error_pp = 0;
  double max_abs_speedup_error_pp = 0;
};

// Every composite point that is correct and modelled, predicted with the cost model of its GPU.
CompositeValidation validate_composites(const std::vector<Measurement>& measurements,
                                        const std::function<sim::CostModel(const std::string& gpu)>& cost_for,
                                        const sim::EngineOptions& options);

std::string composite_table(const CompositeValidation& v);
nlohmann::ordered_json composite_json(const CompositeValidation& v);

// What a held-out profile is fitted on. kind: every single-op point (GEMMs, collectives, copies),
// while only composites are validated. size: the smaller half of each single-op group (by FLOPs or
// bytes; GEMMs, then each collective and rank count, then copies), so the fit extrapolates upwards.
enum class Holdout { kNone, kKind, kSize };
inline constexpr EnumName<Holdout> kHoldoutNames[] = {
    {Holdout::kNone, "none"},
    {Holdout::kKind, "kind"},
    {Holdout::kSize, "size"},
};
Holdout parse_holdout(const std::string& text);
std::vector<Measurement> fit_set(const std::vector<Measurement>& measurements, Holdout holdout);

}  // namespace tpsim::calibrate
