// Chrome trace JSON (opens in Perfetto): one process per variant, pass and GPU, one thread per stream; under a
// pipeline, one more process per variant with a thread per stage: its passes over the step and its optimizer. Flow
// events (arrows in Perfetto) join a collective's ranks, a send's two ends, and a pass to the next stage's pass that
// reads its output.
#pragma once

#include <string>

#include "sim/run/scenario_run.hpp"

namespace tpsim::sim {

struct TraceOptions {
  // The GPUs written of each simulated pass: the first `ranks` (0: every one). The TP ranks of a symmetric run are
  // identical, so one is the default.
  int ranks = 1;
};

std::string chrome_trace_json(const ScenarioRun& run, const TraceOptions& options = {});

}  // namespace tpsim::sim
