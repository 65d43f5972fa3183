// `tpsim validate --trace TRACE.json[.gz] --scenario S.yaml`: the scenario that describes a traced step, run
// and compared with the trace by kernel class and by module; two traces (two variants of the step, in the
// scenario's variant order) add the predicted against the measured speedup.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace tpsim::cli {

struct TraceValidateOptions {
  std::vector<std::string> traces;
  std::string scenario;
  int steps = 0;  // steps each trace holds; 0: the scenario's trace.steps, else ProfilerStep# annotations, else 1
};

// Registers --trace, --scenario and --steps on the validate command.
void add_trace_validate_options(CLI::App* validate, TraceValidateOptions& options);

int run_trace_validate(const TraceValidateOptions& options);

}  // namespace tpsim::cli
