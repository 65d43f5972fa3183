// Reads a scenario's `trace:` section with located errors.
#include "input/trace_section.hpp"

#include "input/yaml_reader.hpp"

namespace tpsim::model {

namespace {

std::vector<std::string> names_in(const YamlReader& in, const YAML::Node& list, const std::string& what) {
  if (!list.IsSequence() || list.size() == 0) in.fail(list, what + " must be a non-empty list of op names");
  std::vector<std::string> out;
  for (const YAML::Node& n : list) {
    out.push_back(in.string(n, what));
    if (out.back().empty()) in.fail(n, what + ": an op name is empty");
  }
  return out;
}

// `trace.rows`: [{variant: V, order: N, ops: [op, ...]} or {variant: V, order: N, span: [first op, last op]}].
std::vector<TraceRowOps> read_rows(const YamlReader& in, const YAML::Node& rows, const model::Scenario& scenario) {
  if (!rows.IsSequence()) {
    in.fail(rows,
            "trace.rows must be a list of {variant: NAME, order: N, ops: [OP, ...]} or {..., span: [FIRST, LAST]}");
  }
  std::vector<std::string> variants;
  for (const model::Variant& v : scenario.variants) variants.push_back(v.name);
  std::vector<TraceRowOps> out;
  for (const YAML::Node& row : rows) {
    in.expect_map(row, "trace.rows entry", {"variant", "order", "ops", "span"});
    in.require(row, "variant", "trace.rows entry");
    in.require(row, "order", "trace.rows entry");
    TraceRowOps r;
    r.variant = in.choice(row["variant"], "trace.rows variant", variants);
    r.order = static_cast<int>(in.int_in(row["order"], "trace.rows order", 1, 1000000));
    if (static_cast<bool>(row["ops"]) == static_cast<bool>(row["span"])) {
      in.fail(row, "a trace.rows entry gives ops (summed) or span (first op's start to last op's end), one of them");
    }
    if (row["ops"]) r.ops = names_in(in, row["ops"], "trace.rows ops");
    if (row["span"]) {
      const std::vector<std::string> span = names_in(in, row["span"], "trace.rows span");
      if (span.size() != 2) in.fail(row["span"], "trace.rows span is [first op, last op]: two names");
      r.span_first = span[0], r.span_last = span[1];
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace

TraceSection read_trace_section(const model::Scenario& scenario, const std::vector<std::string>& module_names) {
  TraceSection out;
  const model::YamlReader in(scenario.file);
  // The scenario's text parsed again: the section keeps the lines and columns it was read with.
  const YAML::Node root = in.parse_text(scenario.source_text);
  const YAML::Node node = root["trace"];
  if (!node) return out;
  in.expect_map(node, "trace", {"framework", "steps", "modules", "rows"});
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
  if (const YAML::Node rows = node["rows"]) out.rows = read_rows(in, rows, scenario);
  return out;
}

}  // namespace tpsim::model
