// A traced step against tpsim's prediction of it: GPU time per step by kernel class and by module, measured
// (kernel durations summed, over the trace's steps) and predicted (op durations of GPU 0 summed over the
// variant's simulated passes), and the step time (first kernel's start to last kernel's end per step).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "calibrate/trace/module_table.hpp"
#include "sim/run/scenario_run.hpp"

namespace tpsim::calibrate {

struct StepTimes {
  std::map<std::string, double> by_class;   // class_name() -> seconds per step
  std::map<std::string, double> by_module;  // module_names() -> seconds per step
  double step_s = 0;
  int steps = 1;
};

// The trace's device 0 (its busiest device when it has several), divided by `steps`.
StepTimes measured_step(const KinetoTrace& trace, int steps, const std::vector<ModuleRule>& rules,
                        const ModuleWidths& widths);

// GPU 0's op durations over every simulated pass of the variant; the variant's time as the step.
StepTimes predicted_step(const sim::VariantRun& variant);

// The class and module tables (measured, predicted, error) of one traced variant.
std::string comparison_text(const StepTimes& measured, const StepTimes& predicted);

}  // namespace tpsim::calibrate
