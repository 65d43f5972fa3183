// A profiler trace as one of calibrate's and validate's inputs: its GPU (the device it names, or the one the
// user gives), its measurement points, and its analysis for the report.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/measurement.hpp"
#include "calibrate/trace/trace_analysis.hpp"

namespace tpsim::calibrate {

struct TraceReading {
  std::string path;
  std::string gpu;  // the GPU preset its points are attributed to
  TraceAnalysis analysis;
  std::vector<std::string> not_fitted;
  size_t points = 0;
};

// The trace's points on `gpu` (a preset), or where empty on the preset of the device the trace names;
// InputError when neither gives one. `gpu_spec` resolves a preset; `reading` receives the analysis.
std::vector<Measurement> trace_measurements(const std::string& bytes, const std::string& path, const std::string& gpu,
                                            const std::function<sim::GpuSpec(const std::string&)>& gpu_spec,
                                            TraceReading* reading);

}  // namespace tpsim::calibrate
