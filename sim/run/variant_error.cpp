// Locating a variant's run errors at the scenario's keys.
#include "sim/run/variant_error.hpp"

#include <string>

#include "base/input_error.hpp"
#include "sim/engine/plan_error.hpp"

namespace tpsim::sim {
namespace {

// The op list entry named `name` (phase ops), or none.
const model::OpEntryKeys* op_entry(const model::Scenario& s, const std::string& name) {
  for (const model::OpEntryKeys& entry : s.keys.ops) {
    if (entry.mapping && entry.name == name) return &entry;
  }
  return nullptr;
}

// The key that asked for the collective a plan error says cannot run.
SourceLocation key_asking(const model::Scenario& s, size_t index, const PlanError& error) {
  const SourceLocation& variant = s.keys.variant(index);
  if (error.setting() == PlanSetting::kProfile) return s.keys.calibration.value_or(variant);
  const bool algorithm = error.setting() == PlanSetting::kAlgorithm;
  if (const model::OpEntryKeys* entry = op_entry(s, error.op_name())) {
    if (const auto& key = algorithm ? entry->algorithm : entry->protocol) return *key;
  }
  // A variant names its algorithm `collective`.
  if (index < s.keys.variants.size()) {
    const model::VariantKeys& keys = s.keys.variants[index];
    if (const auto& key = algorithm ? keys.collective : keys.protocol) return *key;
  }
  return variant;
}

}  // namespace

void locate_variant_errors(const model::Scenario& s, size_t index, const std::function<void()>& run) {
  try {
    run();
  } catch (const InputError& error) {
    if (error.detail() != error.what()) throw;
    const std::string name = index < s.variants.size() ? s.variants[index].name : std::string("?");
    const std::string prefix = "variant " + name + ": ";
    std::string detail = error.detail();
    if (detail.rfind(prefix, 0) == 0) detail.erase(0, prefix.size());
    if (const auto* plan = dynamic_cast<const PlanError*>(&error)) {
      fail_at(key_asking(s, index, *plan), "variant " + name + ", op " + plan->op_name() + ": " + detail);
    }
    fail_at(s.keys.variant(index), prefix + detail);
  }
}

}  // namespace tpsim::sim
