// Reads a scenario's `trace:` section with located errors.
#include "input/trace_section.hpp"

#include "input/yaml_reader.hpp"

namespace tpsim::model {

TraceSection read_trace_section(const model::Scenario& scenario, const std::vector<std::string>& module_names) {
  TraceSection out;
  const model::YamlReader in(scenario.file);
  // The scenario's text parsed again: the section keeps the lines and columns it was read with.
  const YAML::Node root = in.parse_text(scenario.source_text);
  const YAML::Node node = root["trace"];
  if (!node) return out;
  in.expect_map(node, "trace", {"framework", "steps", "modules"});
  if (node["framework"]) in.choice(node["framework"], "trace.framework", {"torch"});
  if (node["steps"]) out.steps = static_cast<int>(in.int_in(node["steps"], "trace.steps", 1, 1000000));
  if (const YAML::Node modules = node["modules"]) {
    if (!modules.IsSequence()) in.fail(modules, "trace.modules must be a list of {match: OP_NAME_PART, module: NAME}");
    for (const YAML::Node& rule : modules) {
      in.expect_map(rule, "trace.modules entry", {"match", "module"});
      in.require(rule, "match", "trace.modules entry");
      in.require(rule, "module", "trace.modules entry");
      const std::string match = in.string(rule["match"], "trace.modules match");
      if (match.empty()) in.fail(rule["match"], "trace.modules match is empty; it is part of an op or kernel name");
      out.rules.push_back({match, in.choice(rule["module"], "trace.modules module", module_names)});
    }
  }
  return out;
}

}  // namespace tpsim::model
