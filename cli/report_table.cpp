// Fixed-width table: times in milliseconds, overlap in percent, speedup over the first variant.
#include "cli/report_table.hpp"

#include <cstdio>
#include <string>

namespace tpsim::cli {
namespace {

std::string format(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

std::string pad(const std::string& text, size_t width, bool left) {
  if (text.size() >= width) return text;
  const std::string fill(width - text.size(), ' ');
  return left ? text + fill : fill + text;
}

}  // namespace

std::string comparison_table(const sim::ScenarioRun& run) {
  const auto& s = run.scenario;
  std::string out;
  out += "scenario " + s.name + ": " + s.arch.name + ", " + std::to_string(s.workload.layers) + " layers, " +
         model::to_string(s.workload.phase) + " batch " + std::to_string(s.workload.batch) + " x seq " +
         std::to_string(s.workload.seq_len) + ", tp=" + std::to_string(s.parallelism.tp) + " on " + run.gpu.name + " " +
         s.topology.value + ", profile " + run.profile.name + "\n";
  size_t name_width = 7;
  for (const auto& v : run.variants) name_width = std::max(name_width, v.variant.name.size());
  const std::vector<std::string> headers = {"time ms", "compute ms", "comm ms", "exposed ms",
                                            "overlap", "speedup",    "tokens/s"};
  out += pad("variant", name_width, true);
  for (const auto& h : headers) out += "  " + pad(h, 11, false);
  out += "\n";
  for (const auto& v : run.variants) {
    const sim::Metrics& m = v.metrics;
    out += pad(v.variant.name, name_width, true);
    for (const std::string& cell :
         {format("%.3f", m.time_s * 1e3), format("%.3f", m.compute_s * 1e3), format("%.3f", m.comm_s * 1e3),
          format("%.3f", m.exposed_comm_s * 1e3), m.comm_s > 0 ? format("%.1f%%", m.overlap * 100) : std::string("-"),
          format("%.3fx", v.speedup), format("%.0f", v.tokens_per_s)}) {
      out += "  " + pad(cell, 11, false);
    }
    out += "\n";
  }
  return out;
}

}  // namespace tpsim::cli
