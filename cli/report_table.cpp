// Fixed-width table: times in milliseconds, overlap in percent, speedup over the first variant.
#include "cli/report_table.hpp"
#include "model/units.hpp"
#include "sim/collective_summary.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

namespace tpsim::cli {
namespace {

std::string pad(const std::string& text, size_t width, bool left) {
  if (text.size() >= width) return text;
  const std::string fill(width - text.size(), ' ');
  return left ? text + fill : fill + text;
}

// One line per variant with collectives: what each group of them ran as; then why any did not run NCCL's
// own choice.
std::string collectives_notes(const sim::ScenarioRun& run) {
  std::string out;
  std::vector<std::string> deviations;
  for (const sim::VariantRun& v : run.variants) {
    std::string line;
    std::vector<std::string> seen;
    for (const sim::CollectiveRun& c : sim::collectives_run(v.passes)) {
      const std::string item = model::to_string(c.kind) + " " + sim::human_bytes(c.tensor_bytes) + " " +
                               sim::ran_as(c.plan) + " [" + sim::costed_by(c.plan) + "]";
      if (std::find(seen.begin(), seen.end(), item) != seen.end()) continue;
      seen.push_back(item);
      line += (line.empty() ? "" : ", ") + item;
      if (!c.plan.deviation.empty() &&
          std::find(deviations.begin(), deviations.end(), c.plan.deviation) == deviations.end()) {
        deviations.push_back(c.plan.deviation);
      }
    }
    if (!line.empty()) out += "  " + v.variant.name + ": " + line + "\n";
  }
  if (!out.empty()) out = "collectives as run [costed by profile section]:\n" + out;
  for (const std::string& d : deviations) out += "note: " + d + "\n";
  return out;
}

}  // namespace

std::string comparison_table(const sim::ScenarioRun& run) {
  const auto& s = run.scenario;
  std::string out;
  const model::Workload& w = s.workload;
  std::string shape =
      w.phase == model::Phase::kOps ? "(" + std::to_string(w.ops.size()) + " ops)" : "batch " + std::to_string(w.batch);
  if (w.phase == model::Phase::kForward || w.phase == model::Phase::kPrefill)
    shape += " x seq " + std::to_string(w.seq_len);
  if (w.phase == model::Phase::kDecode) shape += ", context " + std::to_string(w.context_len);
  if (w.phase == model::Phase::kGenerate) {
    shape += ", prompt " + std::to_string(w.context_len) + " + " + std::to_string(w.gen_len) + " new tokens";
  }
  if (w.dtype == model::Dtype::kFp8) shape += ", fp8 GEMMs";
  if (w.cuda_graphs) shape += ", CUDA graphs";
  const std::string model =
      w.phase == model::Phase::kOps ? std::string() : s.arch.name + ", " + std::to_string(w.layers) + " layers, ";
  out += "scenario " + s.name + ": " + model + model::to_string(w.phase) + " " + shape +
         ", tp=" + std::to_string(s.parallelism.tp) + " on " + run.gpu.name + " " + s.topology.value + ", profile " +
         run.profile.name + "\n";
  const bool ttft = w.phase == model::Phase::kPrefill || w.phase == model::Phase::kGenerate;
  const bool tpot = w.phase == model::Phase::kDecode || w.phase == model::Phase::kGenerate;
  size_t name_width = 7;
  const auto label = [](const sim::VariantRun& v) {
    return v.variant.chunks_auto ? v.variant.name + " (auto: " + std::to_string(v.variant.chunks) + " chunks)"
                                 : v.variant.name;
  };
  for (const auto& v : run.variants) name_width = std::max(name_width, label(v).size());
  std::vector<std::string> headers = {"time ms", "compute ms", "comm ms", "exposed ms",
                                      "overlap", "speedup",    "tokens/s"};
  if (ttft) headers.emplace_back("TTFT ms");
  if (tpot) headers.emplace_back("TPOT ms");
  const bool memory = run.variants.front().memory.has_value();
  if (memory) headers.emplace_back("mem GB");
  bool over = false;
  out += pad("variant", name_width, true);
  for (const auto& h : headers) out += "  " + pad(h, 11, false);
  out += "\n";
  for (const auto& v : run.variants) {
    const sim::Metrics& m = v.metrics;
    out += pad(label(v), name_width, true);
    std::vector<std::string> cells = {model::format_number("%.3f", m.time_s * 1e3),
                                      model::format_number("%.3f", m.compute_s * 1e3),
                                      model::format_number("%.3f", m.comm_s * 1e3),
                                      model::format_number("%.3f", m.exposed_comm_s * 1e3),
                                      m.comm_s > 0 ? model::format_number("%.1f%%", m.overlap * 100) : std::string("-"),
                                      model::format_number("%.3fx", v.speedup),
                                      model::format_number("%.0f", v.tokens_per_s)};
    if (ttft) cells.push_back(v.ttft_s ? model::format_number("%.3f", *v.ttft_s * 1e3) : std::string("-"));
    if (tpot) cells.push_back(v.tpot_s ? model::format_number("%.3f", *v.tpot_s * 1e3) : std::string("-"));
    if (memory) {
      const bool fits = sim::fits_memory(v, run.gpu).value_or(true);
      over = over || !fits;
      cells.push_back(model::format_number("%.1f", v.memory->total_bytes() / 1e9) + (fits ? "" : "!"));
    }
    for (const std::string& cell : cells) {
      out += "  " + pad(cell, 11, false);
    }
    out += "\n";
  }
  if (over) {
    out += "! above " + run.gpu.name + "'s " + model::format_number("%.0f", run.gpu.hbm_bytes / 1e9) +
           " GB of HBM per GPU: this variant does not fit (--require-fit refuses it)\n";
  }
  out += collectives_notes(run);
  return out;
}

}  // namespace tpsim::cli
