// What calibrate says about the profiler traces it read: each trace's kernel classes, unclassified kernels,
// rates it reports, and what it could not fit and why.
#pragma once

#include <ostream>
#include <vector>

#include "base/measurement.hpp"
#include "calibrate/trace/trace_input.hpp"

namespace tpsim::cli {

// Writes each trace's analysis to `out`. When the inputs hold no point at all and some were traces, InputError
// saying what the traces lacked (after their analyses are written).
void report_traces(const std::vector<calibrate::TraceReading>& traces, const std::vector<calibrate::Measurement>& all,
                   std::ostream& out);

}  // namespace tpsim::cli
