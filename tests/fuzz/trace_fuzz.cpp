// Fuzz target: the Kineto trace reader (plain or gzipped), then what calibrate makes of a trace: its points
// and its analysis; inputs headed as a traced step's rows (a CSV) go to that reader instead.
#include "calibrate/trace/kineto_trace.hpp"
#include "calibrate/trace/trace_analysis.hpp"
#include "calibrate/trace/trace_points.hpp"
#include "calibrate/trace/traced_rows.hpp"
#include "tests/fuzz/fuzz_target.hpp"
#include "tests/test_support.hpp"

void tpsim::fuzz::fuzz_one(std::string_view data) {
  if (calibrate::is_traced_rows_csv(std::string(data))) {
    calibrate::read_traced_rows(std::string(data), "rows.csv");
    return;
  }
  const calibrate::KinetoTrace trace = calibrate::parse_kineto_trace(std::string(data), "trace.json");
  std::vector<std::string> not_fitted;
  calibrate::trace_points(trace, "h100-sxm", not_fitted);
  static const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  calibrate::analysis_text(calibrate::analyse_trace(trace, gpu), not_fitted);
}
