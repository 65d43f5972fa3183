// Sweep expansion by overriding the YAML document and parsing each point again, so every point gets
// the same checks (and error locations) as a hand-written scenario.
#include "model/sweep.hpp"

#include <algorithm>

#include "model/input_error.hpp"
#include "model/presets.hpp"
#include "model/yaml_reader.hpp"

namespace tpsim::model {
namespace {

const char* const kValidAxes =
    "workload.<key>, hardware.<key>, parallelism.<key>, variants.<name>.<key>, model, calibration";

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
  const auto check_key = [&](const std::string& section, const std::string& key) {
    const std::vector<std::string> valid = section_keys(section);
    if (std::find(valid.begin(), valid.end(), key) == valid.end()) {
      in.fail(at, "sweep axis '" + path + "': unknown key '" + key + "' in " + section +
                      "; valid keys: " + join_names(valid));
    }
  };
  if (parts.size() == 2 && (head == "workload" || head == "hardware" || head == "parallelism")) {
    check_key(head, parts[1]);
    if (!root[head].IsMap()) in.fail(at, "sweep axis '" + path + "': the scenario has no " + head + " mapping");
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

}  // namespace

std::vector<SweepPoint> expand_sweep(const Scenario& base) {
  if (!base.sweep.IsMap() || base.sweep.size() == 0) return {SweepPoint{{}, base}};
  const YamlReader in(base.file);
  std::vector<std::pair<YAML::Node, YAML::Node>> axes;  // (key node, list of values)
  for (const auto& entry : base.sweep) {
    if (!entry.second.IsSequence() || entry.second.size() == 0) {
      in.fail(entry.second, "sweep axis '" + entry.first.as<std::string>() + "' needs a non-empty list of values");
    }
    axes.emplace_back(entry.first, entry.second);
  }
  std::vector<SweepPoint> points;
  std::vector<size_t> index(axes.size(), 0);
  while (true) {
    YAML::Node root = YAML::Clone(base.root);
    root.remove("sweep");
    SweepPoint point;
    for (size_t a = 0; a < axes.size(); ++a) {
      const std::string path = axes[a].first.as<std::string>();
      const YAML::Node value = axes[a].second[index[a]];
      // The value node itself (not a copy) keeps its line and column for errors.
      apply(in, root, path, value, axes[a].first);
      point.values.emplace_back(path, value_text(value));
    }
    point.scenario = parse_scenario_node(root, base.file);
    point.scenario.sweep = YAML::Node();
    points.push_back(std::move(point));
    size_t a = axes.size();
    while (a > 0 && ++index[a - 1] == axes[a - 1].second.size()) index[--a] = 0;
    if (a == 0) break;
  }
  return points;
}

}  // namespace tpsim::model
