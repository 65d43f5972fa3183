// Sweep expansion by overriding the YAML document and parsing each point again, so every point gets
// the same checks (and error locations) as a hand-written scenario.
#include "input/sweep.hpp"

#include <algorithm>

#include "base/input_error.hpp"
#include "base/limits.hpp"
#include "input/presets.hpp"
#include "input/scenario_loader.hpp"
#include "input/yaml_reader.hpp"

namespace tpsim::model {
namespace {

const char* const kValidAxes =
    "workload.<key>, hardware.<key>, parallelism.<key>, pipeline.<key>, fsdp.<key>, ddp.<key>, skew.<key>, "
    "distributed_optimizer.<key>, implementation.<key>, "
    "variants.<name>.<key>, model, calibration, pipeline";

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot - start));
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

std::string value_text(const YAML::Node& value) {
  if (value.IsScalar()) return value.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << value;
  return out.c_str();
}

// Sets `path` in `root` to `value`; `at` locates errors (the sweep key).
void apply(const YamlReader& in, YAML::Node root, const std::string& path, const YAML::Node& value,
           const YAML::Node& at) {
  const std::vector<std::string> parts = split_path(path);
  const std::string& head = parts.front();
  if (parts.size() == 1 && (head == "model" || head == "calibration")) {
    root[head] = value;
    return;
  }
  if (parts.size() == 1 && head == "pipeline") {
    // A whole pipeline section per value: the keys that go together (a schedule, its virtual stages, its split).
    if (!value.IsMap()) in.fail(value, "sweep axis 'pipeline': each value is a pipeline section (a mapping)");
    root[head] = value;
    return;
  }
  const auto check_key = [&](const std::string& section, const std::string& key) {
    const std::vector<std::string> valid = section_keys(section);
    if (std::find(valid.begin(), valid.end(), key) == valid.end()) {
      in.fail(at, "sweep axis '" + path + "': unknown key '" + key + "' in " + section +
                      "; valid keys: " + join_names(valid));
    }
  };
  if (parts.size() == 2 && (head == "workload" || head == "hardware" || head == "parallelism" || head == "skew")) {
    check_key(head, parts[1]);
    if (!root[head].IsMap()) in.fail(at, "sweep axis '" + path + "': the scenario has no " + head + " mapping");
    root[head][parts[1]] = value;
    return;
  }
  if (parts.size() == 2 &&
      (head == "pipeline" || head == "fsdp" || head == "ddp" || head == "moe" || head == "distributed_optimizer")) {
    // No section: the defaults' (pipeline: 1f1b, one chunk per stage), with the swept key over them.
    check_key(head, parts[1]);
    if (!root[head]) root[head] = YAML::Node(YAML::NodeType::Map);
    if (!root[head].IsMap()) in.fail(at, "sweep axis '" + path + "': the scenario's " + head + " is not a mapping");
    root[head][parts[1]] = value;
    return;
  }
  if (parts.size() == 2 && head == "implementation") {
    // A preset named alone becomes {preset: name} with the swept key over it; no block: the idealised layer's.
    check_key(head, parts[1]);
    YAML::Node block = root[head];
    if (block && block.IsScalar()) {
      YAML::Node over_preset(YAML::NodeType::Map);
      over_preset["preset"] = block.Scalar();
      root[head] = over_preset;
    } else if (!block) {
      root[head] = YAML::Node(YAML::NodeType::Map);
    } else if (!block.IsMap()) {
      in.fail(at, "sweep axis '" + path + "': the scenario's implementation is neither a preset name nor a mapping");
    }
    root[head][parts[1]] = value;
    return;
  }
  if (parts.size() == 3 && head == "variants" && root["variants"].IsSequence()) {
    for (size_t i = 0; i < root["variants"].size(); ++i) {
      YAML::Node variant = root["variants"][i];
      const YAML::Node name = variant["name"] ? variant["name"] : variant["tp_mode"];
      if (name && name.IsScalar() && name.Scalar() == parts[1]) {
        check_key("variant", parts[2]);
        variant[parts[2]] = value;
        return;
      }
    }
    in.fail(at, "sweep axis '" + path + "': no variant named '" + parts[1] + "'");
  }
  in.fail(at, "sweep axis '" + path + "' is not a valid path; valid: " + kValidAxes);
}

// The scenario's sweep: section, parsed again from its text (the same lines and columns as when it was read).
YAML::Node sweep_node(const Scenario& scenario) {
  return YamlReader(scenario.file).parse_text(scenario.source_text)["sweep"];
}

// The scenario document with the sweep values of `digits` applied (only `only_axis`'s when given).
YAML::Node point_document(const Scenario& base, const std::vector<size_t>& digits, std::optional<size_t> only_axis) {
  const YamlReader in(base.file);
  // A fresh parse per point: its nodes keep their lines and columns for errors, and moving a sweep
  // value within one document stays cheap (yaml-cpp merges the memory of two documents).
  YAML::Node root = in.parse_text(base.source_text);
  size_t a = 0;
  for (const auto& entry : YAML::Node(root["sweep"])) {
    if (!only_axis || *only_axis == a) apply(in, root, entry.first.Scalar(), entry.second[digits[a]], entry.first);
    ++a;
  }
  root.remove("sweep");
  return root;
}

}  // namespace

SweepPlan::SweepPlan(const Scenario& base) : base_(base) {
  if (!base.has_sweep) return;
  const YamlReader in(base.file);
  for (const auto& entry : sweep_node(base)) {
    const std::string& axis = entry.first.Scalar();
    if (!entry.second.IsSequence() || entry.second.size() == 0) {
      in.fail(entry.second, "sweep axis '" + axis + "' needs a non-empty list of values");
    }
    if (entry.second.size() > kMaxSweepPoints / size_) {
      in.fail(entry.second, "sweep axis '" + axis + "' takes the sweep past tpsim's limit of " +
                                std::to_string(kMaxSweepPoints) +
                                " points (docs/reliability.md); split it over several scenario files");
    }
    std::vector<std::string> values;
    for (const auto& value : entry.second) values.push_back(value_text(value));
    size_ *= values.size();
    axes_.emplace_back(axis, std::move(values));
  }
}

std::vector<size_t> SweepPlan::digits(size_t index) const {
  std::vector<size_t> out(axes_.size());
  for (size_t a = axes_.size(); a-- > 0;) {
    out[a] = index % axes_[a].second.size();
    index /= axes_[a].second.size();
  }
  return out;
}

AxisValues SweepPlan::values(size_t index) const {
  const std::vector<size_t> d = digits(index);
  AxisValues out;
  for (size_t a = 0; a < axes_.size(); ++a) out.emplace_back(axes_[a].first, axes_[a].second[d[a]]);
  return out;
}

InputError SweepPlan::point_error(const std::vector<size_t>& digits, const InputError& error) const {
  // The axis whose value alone makes the scenario invalid, else (a combination) all of them.
  std::optional<size_t> culprit;
  for (size_t a = 0; a < axes_.size() && !culprit; ++a) {
    try {
      parse_scenario_node(point_document(base_, digits, a), base_.file);
    } catch (const InputError&) {
      culprit = a;
    }
  }
  std::string values;
  for (size_t a = 0; a < axes_.size(); ++a) {
    if (!culprit || *culprit == a) {
      values += (values.empty() ? "" : ", ") + axes_[a].first + "=" + axes_[a].second[digits[a]];
    }
  }
  size_t a = 0;
  YAML::Node value;
  for (const auto& entry : sweep_node(base_)) {
    if (a++ == culprit.value_or(0)) value = entry.second[digits[culprit.value_or(0)]];
  }
  return InputError(YamlReader(base_.file).where(value), (culprit ? "sweep value " : "sweep values ") + values +
                                                             (culprit ? "" : " together") + ": " + error.detail());
}

Scenario SweepPlan::point(size_t index) const {
  if (axes_.empty()) return base_;
  const std::vector<size_t> d = digits(index);
  const YAML::Node root = point_document(base_, d, std::nullopt);
  try {
    Scenario scenario = parse_scenario_node(root, base_.file);
    scenario.has_sweep = false;
    return scenario;
  } catch (const InputError& error) {
    throw point_error(d, error);
  }
}

std::vector<SweepPoint> expand_sweep(const Scenario& base, bool keep_invalid) {
  const SweepPlan plan(base);
  if (plan.size() > kMaxRunPoints) {
    throw InputError(YamlReader(base.file).where(sweep_node(base)),
                     "the sweep has " + std::to_string(plan.size()) +
                         " points; tpsim run holds every point in memory "
                         "and takes at most " +
                         std::to_string(kMaxRunPoints) + " (docs/reliability.md): run it with tpsim sweep FILE -o DIR");
  }
  std::vector<SweepPoint> points;
  for (size_t i = 0; i < plan.size(); ++i) {
    SweepPoint point;
    point.values = plan.values(i);
    try {
      point.scenario = plan.point(i);
    } catch (const InputError& error) {
      if (!keep_invalid) throw;
      point.error = error.what();
    }
    points.push_back(std::move(point));
  }
  return points;
}

}  // namespace tpsim::model
