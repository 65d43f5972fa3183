// One table across a sweep's points, after their own tables.
#include "cli/report/sweep_summary.hpp"

#include <algorithm>

#include "base/units.hpp"
#include "cli/report/text_table.hpp"

namespace tpsim::cli {

std::string sweep_summary_table(const std::vector<PointRun>& runs) {
  if (runs.size() < 2) return "";
  const sim::ScenarioRun& first = runs.front().run;
  std::vector<std::string> headers;
  for (const auto& [axis, value] : runs.front().values) headers.push_back(axis);
  const size_t axes = headers.size();
  size_t variants = 0;
  for (const PointRun& p : runs) variants = std::max(variants, p.run.variants.size());
  for (size_t i = 0; i < variants; ++i) {
    headers.push_back(i < first.variants.size() ? first.variants[i].variant.name : "variant " + std::to_string(i + 1));
  }
  bool over = false;
  std::vector<std::vector<std::string>> rows;
  for (const PointRun& p : runs) {
    std::vector<std::string> row;
    for (const auto& [axis, value] : p.values) row.push_back(value);
    for (size_t i = 0; i < variants; ++i) {
      if (i >= p.run.variants.size()) {
        row.emplace_back("-");
        continue;
      }
      const sim::VariantRun& v = p.run.variants[i];
      const bool fits = sim::fits_memory(v, p.run.gpu).value_or(true);
      over = over || !fits;
      row.push_back(model::format_number("%.3f", v.metrics.time_s * 1e3) +
                    (i == 0 ? "" : " (" + model::format_number("%.3fx", v.speedup) + ")") + (fits ? "" : "!"));
    }
    rows.push_back(std::move(row));
  }
  std::string out = "summary of the " + std::to_string(runs.size()) + " points: time ms per variant (speedup over " +
                    headers[axes] + ")\n" + text_table(headers, rows, axes);
  if (over) out += "! above the GPU's HBM per GPU: does not fit (--require-fit refuses it)\n";
  return out;
}

}  // namespace tpsim::cli
