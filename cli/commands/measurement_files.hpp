// Measurement inputs of the calibrate and validate commands: JSON-lines files and nccl-tests logs,
// and the GPU presets they name.
#pragma once

#include <string>
#include <vector>

#include "base/measurement.hpp"
#include "calibrate/trace/trace_input.hpp"
#include "sim/cost/gpu_spec.hpp"

namespace tpsim::cli {

// A GPU preset by name; InputError naming `what` and the valid presets otherwise.
sim::GpuSpec gpu_preset(const std::string& name, const std::string& what);

// Measurement files, nccl-tests logs (recognised by their header) or profiler traces (plain or gzipped
// Chrome-trace JSON, recognised by content) attributed to `log_gpu`; each trace's reading goes to `traces`.
std::vector<calibrate::Measurement> read_all(const std::vector<std::string>& files, const std::string& log_gpu,
                                             std::vector<calibrate::TraceReading>* traces = nullptr);

// The GEMM points' GPU if any (fractions of peak FLOP/s and HBM are relative to it), else the most
// common GPU among the measurements.
std::string measured_gpu(const std::vector<calibrate::Measurement>& all);

}  // namespace tpsim::cli
