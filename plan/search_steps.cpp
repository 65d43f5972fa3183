// The pre-simulation checks of a candidate's scenario and the counts a plan's search keeps.
#include "plan/search_steps.hpp"

#include "base/input_error.hpp"
#include "input/gpu_reader.hpp"
#include "plan/memory_estimate.hpp"

namespace tpsim::plan {

std::string refusal_reason(const std::string& message) {
  for (const char* word : {"divide", "split", "multiple of", "groups of", "evenly"}) {
    if (message.find(word) != std::string::npos) return "divisibility";
  }
  return "unsupported";
}

Verdict check_scenario(const std::string& text, const std::string& file, model::Scenario& scenario, sim::GpuSpec& gpu) {
  Verdict v;
  try {
    scenario = model::parse_scenario(text, file);
  } catch (const InputError& error) {
    v.reason = refusal_reason(error.detail());
    v.detail = error.detail();
    return v;
  }
  gpu = sim::resolve_gpu(scenario);
  try {
    sim::check_hardware(scenario, gpu);
  } catch (const InputError& error) {
    v.reason = "placement";
    v.detail = error.detail();
    return v;
  }
  try {
    v.memory_bytes = sim::estimate_memory(scenario, scenario.variants.front(), gpu).device_bytes();
  } catch (const InputError& error) {
    v.reason = refusal_reason(error.detail());
    v.detail = error.detail();
  }
  return v;
}

void add_worker_counts(const WorkerCounts& counts, SearchTotals& totals) {
  totals.cache_hits += counts.cache_hits;
  totals.cache_misses += counts.cache_misses;
  totals.cache_saved_s += counts.cache_saved_s;
  totals.failures.insert(totals.failures.end(), counts.crashes.begin(), counts.crashes.end());
}

}  // namespace tpsim::plan
