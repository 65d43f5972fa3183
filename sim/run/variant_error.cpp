// Locating a variant's run errors at the scenario's keys.
#include "sim/run/variant_error.hpp"

#include <string>

#include "base/input_error.hpp"
#include "input/yaml_reader.hpp"
#include "sim/engine/plan_error.hpp"

namespace tpsim::sim {
namespace {

const char* key_of(PlanSetting setting) {
  return setting == PlanSetting::kAlgorithm ? "algorithm" : "protocol";
}

// The op list entry named `name` (phase ops), or an undefined node.
YAML::Node op_entry(const model::Scenario& s, const std::string& name) {
  const YAML::Node workload = s.root["workload"];
  if (!workload || !workload.IsMap() || !workload["ops"] || !workload["ops"].IsSequence()) {
    return YAML::Node(YAML::NodeType::Undefined);
  }
  const YAML::Node ops = workload["ops"];
  for (const YAML::Node& entry : ops) {
    if (entry.IsMap() && entry["name"] && entry["name"].Scalar() == name) return entry;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

YAML::Node variant_node(const model::Scenario& s, size_t index) {
  const YAML::Node variants = s.root["variants"];
  if (!variants || !variants.IsSequence() || index >= variants.size()) return s.root;
  return variants[index];
}

// The key that asked for the collective a plan error says cannot run.
YAML::Node key_asking(const model::Scenario& s, size_t index, const PlanError& error) {
  const YAML::Node variant = variant_node(s, index);
  if (error.setting() == PlanSetting::kProfile) {
    if (s.root["calibration"]) return s.root["calibration"];
    return variant;
  }
  if (const YAML::Node entry = op_entry(s, error.op_name()); entry && entry[key_of(error.setting())]) {
    return entry[key_of(error.setting())];
  }
  // A variant names its algorithm `collective`.
  const char* key = error.setting() == PlanSetting::kAlgorithm ? "collective" : "protocol";
  if (variant.IsMap() && variant[key]) return variant[key];
  return variant;
}

}  // namespace

void locate_variant_errors(const model::Scenario& s, size_t index, const std::function<void()>& run) {
  try {
    run();
  } catch (const InputError& error) {
    if (error.detail() != error.what()) throw;
    const model::YamlReader in(s.file);
    const std::string name = index < s.variants.size() ? s.variants[index].name : std::string("?");
    const std::string prefix = "variant " + name + ": ";
    std::string detail = error.detail();
    if (detail.rfind(prefix, 0) == 0) detail.erase(0, prefix.size());
    if (const auto* plan = dynamic_cast<const PlanError*>(&error)) {
      in.fail(key_asking(s, index, *plan), "variant " + name + ", op " + plan->op_name() + ": " + detail);
    }
    in.fail(variant_node(s, index), prefix + detail);
  }
}

}  // namespace tpsim::sim
