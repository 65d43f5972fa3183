// Printing the traces' analyses before calibrate fits or reports.
#include "cli/report/trace_report.hpp"

#include "base/input_error.hpp"

namespace tpsim::cli {

void report_traces(const std::vector<calibrate::TraceReading>& traces, const std::vector<calibrate::Measurement>& all,
                   std::ostream& out) {
  for (const calibrate::TraceReading& t : traces) {
    out << "calibrate: " << calibrate::analysis_text(t.analysis, t.not_fitted) << "  " << t.points << " points on "
        << t.gpu << " (GEMMs by shape, collectives by size and group, copies by size)\n";
    out.flush();  // before any simulation forks
  }
  if (all.empty() && !traces.empty()) {
    throw InputError(echo_path(traces.front().path) +
                     ": the trace holds no kernel tpsim can fit (see 'not fitted' above): record with "
                     "record_shapes=True, in bf16 or fp8, with NCCL calls through torch.distributed");
  }
}

}  // namespace tpsim::cli
