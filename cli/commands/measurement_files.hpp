// Measurement inputs of the calibrate and validate commands: JSON-lines files and nccl-tests logs,
// and the GPU presets they name.
#pragma once

#include <string>
#include <vector>

#include "base/measurement.hpp"
#include "sim/cost/gpu_spec.hpp"

namespace tpsim::cli {

// A GPU preset by name; InputError naming `what` and the valid presets otherwise.
sim::GpuSpec gpu_preset(const std::string& name, const std::string& what);

// Measurement files, or nccl-tests logs (recognised by their header) attributed to `log_gpu`.
std::vector<calibrate::Measurement> read_all(const std::vector<std::string>& files, const std::string& log_gpu);

// The GEMM points' GPU if any (fractions of peak FLOP/s and HBM are relative to it), else the most
// common GPU among the measurements.
std::string measured_gpu(const std::vector<calibrate::Measurement>& all);

}  // namespace tpsim::cli
