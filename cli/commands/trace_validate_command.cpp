// Runs the scenario of a traced step and prints the trace's kernel-class and module comparison.
#include "cli/commands/trace_validate_command.hpp"

#include <CLI/CLI.hpp>
#include <iostream>

#include "base/input_error.hpp"
#include "calibrate/trace/trace_compare.hpp"
#include "input/trace_section.hpp"
#include "model/scenario.hpp"

namespace tpsim::cli {

namespace {

// The scenario's trace section with its module rules as the comparison takes them.
struct TraceSection {
  int steps = 0;
  std::vector<calibrate::ModuleRule> rules;
};

TraceSection read_trace_section(const model::Scenario& scenario) {
  std::vector<std::string> valid = calibrate::module_names();
  valid.pop_back();  // unattributed is what no rule names
  const model::TraceSection read = model::read_trace_section(scenario, valid);
  TraceSection out{read.steps, {}};
  for (const model::TraceModuleRule& rule : read.rules) out.rules.push_back({rule.match, rule.module});
  return out;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

void add_trace_validate_options(CLI::App* validate, TraceValidateOptions& options) {
  validate
      ->add_option("--trace", options.traces,
                   "PyTorch profiler (Kineto) trace of the step --scenario describes (.json or .json.gz); twice: "
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
    std::cout << "\nspeedup of " << run.variants[1].variant.name << " over " << run.variants[0].variant.name
              << ": measured " << fixed(m, 3) << "x, predicted " << fixed(p, 3) << "x, error " << (p >= m ? "+" : "")
              << fixed(100 * (p / m - 1), 1) << "%\n";
  }
  return 0;
}

}  // namespace tpsim::cli
