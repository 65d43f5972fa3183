// Runs the scenario of a traced step and prints the trace's kernel-class and module comparison.
#include "cli/commands/trace_validate_command.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <fstream>
#include <iostream>
#include <set>

#include "base/input_error.hpp"
#include "base/input_file.hpp"
#include "base/limits.hpp"
#include "calibrate/trace/trace_compare.hpp"
#include "calibrate/trace/traced_rows.hpp"
#include "cli/report/text_table.hpp"
#include "input/trace_section.hpp"
#include "model/scenario.hpp"

namespace tpsim::cli {

namespace {

// The scenario's trace section with its module rules as the comparison takes them.
struct TraceSection {
  int steps = 0;
  std::vector<calibrate::ModuleRule> rules;
  std::vector<calibrate::RowOps> rows;
};

TraceSection read_trace_section(const model::Scenario& scenario) {
  std::vector<std::string> valid = calibrate::module_names();
  valid.pop_back();  // unattributed is what no rule names
  const model::TraceSection read = model::read_trace_section(scenario, valid);
  TraceSection out{read.steps, {}, {}};
  for (const model::TraceModuleRule& rule : read.rules) out.rules.push_back({rule.match, rule.module});
  for (const model::TraceRowOps& r : read.rows)
    out.rows.push_back({r.variant, r.order, r.ops, r.span_first, r.span_last});
  return out;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string error_text(double measured, double predicted) {
  if (measured <= 0) return "";
  return (predicted >= measured ? "+" : "") + fixed(100 * (predicted / measured - 1), 1) + "%";
}

std::string speedup_line(const std::string& fast, const std::string& slow, double measured, double predicted) {
  return "speedup of " + fast + " over " + slow + ": measured " + fixed(measured, 3) + "x, predicted " +
         fixed(predicted, 3) + "x, error " + error_text(measured, predicted) + "\n";
}

// Whether the file's first bytes are a traced step's rows' header (a CSV), not a Kineto trace.
bool starts_as_traced_rows(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(128, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return calibrate::is_traced_rows_csv(head);
}

// One variant's rows: the row, the traced and predicted milliseconds and the error, then the step.
void print_rows(const calibrate::TracedVariantComparison& c) {
  std::vector<std::vector<std::string>> rows;
  for (const calibrate::RowComparison& r : c.rows) {
    const std::string traced = fixed(r.row.duration_s * 1e3, 2);
    const std::string why = r.row.kind == "gap"    ? "(idle)"
                            : r.row.kind == "rate" ? "(not in the step)"
                                                   : "(no ops named)";
    rows.push_back({r.row.order > 0 ? std::to_string(r.row.order) : "", r.row.label, r.row.kind, traced,
                    r.predicted_s ? fixed(*r.predicted_s * 1e3, 2) : "",
                    r.predicted_s ? error_text(r.row.duration_s, *r.predicted_s) : why});
  }
  std::cout << cli::text_table({"row", "traced kernel or block", "kind", "traced ms", "predicted ms", "error"}, rows,
                               3);
  std::cout << "step (" << (c.step_from_span ? "the traced span" : "the rows summed")
            << "; predicted: the variant's time): measured " << fixed(c.measured_step_s * 1e3, 2) << " ms, predicted "
            << fixed(c.predicted_step_s * 1e3, 2) << " ms, error " << error_text(c.measured_step_s, c.predicted_step_s)
            << "\n";
}

// A step traced as rows (one CSV, the variants it names in the scenario's order): each variant's rows against
// the ops trace.rows names for them, then the speedup of the second variant over the first.
int run_rows_validate(const std::string& path, const std::string& text, const model::Scenario& scenario,
                      const TraceSection& section) {
  const calibrate::TracedRows rows = calibrate::read_traced_rows(text, path);
  std::set<std::string> traced;
  for (const calibrate::TracedRow& r : rows.rows) traced.insert(r.variant);
  for (const std::string& v : traced) {
    const bool known = std::any_of(scenario.variants.begin(), scenario.variants.end(),
                                   [&](const model::Variant& sv) { return sv.name == v; });
    if (!known) throw InputError(path + ": variant '" + v + "' is not a variant of " + scenario.file);
  }
  const sim::ScenarioRun run = sim::run_scenario(scenario);
  std::vector<calibrate::TracedVariantComparison> compared;
  std::vector<std::string> names;
  for (const sim::VariantRun& v : run.variants) {
    if (!traced.count(v.variant.name)) continue;
    compared.push_back(calibrate::compare_traced_rows(rows, v, section.rows));
    names.push_back(v.variant.name);
    std::cout << (compared.size() > 1 ? "\n" : "") << "traced rows " << path << " against " << scenario.name
              << " variant " << v.variant.name << ":\n";
    print_rows(compared.back());
  }
  if (compared.size() >= 2) {
    std::cout << "\n"
              << speedup_line(names[1], names[0], compared[0].measured_step_s / compared[1].measured_step_s,
                              compared[0].predicted_step_s / compared[1].predicted_step_s);
  }
  return 0;
}

}  // namespace

void add_trace_validate_options(CLI::App* validate, TraceValidateOptions& options) {
  validate
      ->add_option(
          "--trace", options.traces,
          "PyTorch profiler (Kineto) trace of the step --scenario describes (.json or .json.gz), or its rows (a CSV "
          "headed variant,order,kernel_or_block,duration_ms,kind; the scenario's trace.rows name their ops); twice: "
          "two variants of the step, in the scenario's variant order")
      ->check(CLI::ExistingFile);
  validate->add_option("--scenario", options.scenario, "Scenario describing the traced step (with --trace)")
      ->check(CLI::ExistingFile);
  validate->add_option("--steps", options.steps,
                       "Steps each trace holds (default: the scenario's trace.steps, else its ProfilerStep# "
                       "annotations, else 1)");
}

int run_trace_validate(const TraceValidateOptions& o) {
  if (o.scenario.empty())
    throw InputError("validate --trace needs --scenario: the scenario describing the traced step");
  if (o.traces.size() > 2) throw InputError("validate --trace takes one trace, or two (two variants of the step)");
  if (o.steps < 0)
    throw InputError("--steps " + std::to_string(o.steps) + ": give the steps each trace holds (1 or more)");
  const model::Scenario scenario = model::load_scenario(o.scenario);
  const TraceSection section = read_trace_section(scenario);
  if (o.traces.size() == 1 && starts_as_traced_rows(o.traces[0])) {
    const std::string text = read_input_file(o.traces[0], "traced rows", model::kMaxTextFileBytes);
    return run_rows_validate(o.traces[0], text, scenario, section);
  }
  if (scenario.variants.size() < o.traces.size()) {
    throw InputError(o.scenario + ": " + std::to_string(o.traces.size()) +
                     " traces need as many variants (trace i "
                     "is the scenario's variant i); it has " +
                     std::to_string(scenario.variants.size()));
  }
  std::vector<calibrate::KinetoTrace> traces;
  for (const std::string& path : o.traces) traces.push_back(calibrate::read_kineto_trace(path));
  std::vector<calibrate::ModuleRule> rules = section.rules;
  for (const calibrate::ModuleRule& r : calibrate::torch_module_rules()) rules.push_back(r);
  const int tp = scenario.parallelism.tp;
  const calibrate::ModuleWidths widths{scenario.arch.intermediate / tp, scenario.arch.vocab / tp};
  const sim::ScenarioRun run = sim::run_scenario(scenario);
  std::vector<calibrate::StepTimes> measured, predicted;
  for (size_t i = 0; i < traces.size(); ++i) {
    const int steps = o.steps > 0 ? o.steps : section.steps > 0 ? section.steps : std::max(1, traces[i].profiler_steps);
    measured.push_back(calibrate::measured_step(traces[i], steps, rules, widths));
    predicted.push_back(calibrate::predicted_step(run.variants[i]));
    std::cout << (i ? "\n" : "") << "trace " << o.traces[i] << " (" << steps << " step" << (steps == 1 ? "" : "s")
              << ") against " << scenario.name << " variant " << run.variants[i].variant.name << ":\n"
              << calibrate::comparison_text(measured.back(), predicted.back());
  }
  if (traces.size() == 2) {
    const double m = measured[0].step_s / measured[1].step_s;
    const double p = predicted[0].step_s / predicted[1].step_s;
    std::cout << "\n" << speedup_line(run.variants[1].variant.name, run.variants[0].variant.name, m, p);
  }
  return 0;
}

}  // namespace tpsim::cli
