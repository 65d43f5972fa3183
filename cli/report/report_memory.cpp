// Memory per GPU by part, as fixed-width rows in GiB.
#include "cli/report/report_memory.hpp"

#include <utility>
#include <vector>

#include "base/units.hpp"

namespace tpsim::cli {
namespace {

constexpr size_t kWidth = 8;  // each part's column, wider where its name is

std::string gib(double bytes, size_t width) {
  std::string text = model::format_number("%.2f", bytes / sim::kGiB);
  return text.size() >= width ? text : std::string(width - text.size(), ' ') + text;
}

// The columns: each part of model::MemoryFootprint, the sums after the parts they add up.
const std::vector<std::pair<std::string, double (*)(const model::MemoryFootprint&)>>& columns() {
  using M = model::MemoryFootprint;
  static const std::vector<std::pair<std::string, double (*)(const M&)>> list = {
      {"weights", [](const M& m) { return m.weights_bytes; }},
      {"grads", [](const M& m) { return m.gradient_bytes; }},
      {"optimizer", [](const M& m) { return m.optimizer_bytes; }},
      {"activations", [](const M& m) { return m.activation_bytes; }},
      {"KV cache", [](const M& m) { return m.kv_cache_bytes; }},
      {"buffers", [](const M& m) { return m.buffer_bytes; }},
      {"=tensors", [](const M& m) { return m.tensor_bytes(); }},
      {"workspace", [](const M& m) { return m.workspace_bytes; }},
      {"allocator", [](const M& m) { return m.allocator_reserve_bytes; }},
      {"=reserved", [](const M& m) { return m.peak_reserved_bytes(); }},
      {"context", [](const M& m) { return m.context_bytes; }},
      {"NCCL", [](const M& m) { return m.nccl_bytes; }},
      {"symm mem", [](const M& m) { return m.symmetric_memory_bytes; }},
      {"=device", [](const M& m) { return m.device_bytes(); }},
  };
  return list;
}

std::string header(const std::string& first, size_t width) {
  std::string out = first + std::string(width > first.size() ? width - first.size() : 0, ' ');
  for (const auto& [name, part] : columns()) {
    out += "  " + std::string(name.size() < kWidth ? kWidth - name.size() : 0, ' ') + name;
  }
  return out + "  fits\n";
}

std::string row(const std::string& first, size_t width, const model::MemoryFootprint& m, double usable) {
  std::string out = first + std::string(width > first.size() ? width - first.size() : 0, ' ');
  for (const auto& [name, part] : columns()) out += "  " + gib(part(m), std::max(kWidth, name.size()));
  return out + (usable <= 0 ? "     -" : m.device_bytes() <= usable ? "   yes" : "    NO") + "\n";
}

}  // namespace

std::string memory_note(const sim::ScenarioRun& run) {
  const model::Scenario& s = run.scenario;
  if (s.workload.phase == model::Phase::kOps || run.variants.empty() || !run.variants.front().memory) return "";
  std::string note = "mem GiB: per GPU, all " + std::to_string(s.arch.layers) + " layers";
  if (s.workload.layers < s.arch.layers) note += " (" + std::to_string(s.workload.layers) + " simulated)";
  note += run.gpu.runtime_memory.given ? ", the allocator's peak reserve, the CUDA context and NCCL's buffers included"
                                       : ", tensors only (" + run.gpu.name + " states no runtime_memory)";
  const double usable = sim::usable_hbm_bytes(run.gpu);
  if (usable > 0) note += "; " + run.gpu.name + " gives " + model::format_number("%.2f", usable / sim::kGiB) + " GiB";
  return note + "; --memory shows the parts\n";
}

std::string memory_table(const sim::ScenarioRun& run) {
  if (run.variants.empty() || !run.variants.front().memory) return "";
  const model::Scenario& s = run.scenario;
  const double usable = sim::usable_hbm_bytes(run.gpu);
  size_t width = 7;
  for (const sim::VariantRun& v : run.variants) width = std::max(width, v.variant.name.size() + 9);
  std::string out = "memory per GPU in GiB, all " + std::to_string(s.arch.layers) + " layers, against " + run.gpu.name +
                    "'s usable " + model::format_number("%.2f", usable / sim::kGiB) +
                    " GiB (=tensors: the tensors' peak; =reserved: what PyTorch's max_memory_reserved reports; "
                    "=device: what must fit)\n" +
                    header("variant", width);
  for (const sim::VariantRun& v : run.variants) {
    if (!v.pipeline) {
      out += row(v.variant.name, width, *v.memory, usable);
      continue;
    }
    for (size_t i = 0; i < v.pipeline->stages.size(); ++i) {
      out += row(v.variant.name + " stage " + std::to_string(i), width, v.pipeline->stages[i].memory, usable);
    }
  }
  if (run.gpu.runtime_memory.given) out += "runtime parts: " + run.gpu.runtime_memory.source + "\n";
  return out;
}

}  // namespace tpsim::cli
