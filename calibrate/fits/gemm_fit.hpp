// Fits the GEMM cost parameters (efficiency, HBM efficiency, per-kernel overhead) to measured GEMM times.
#pragma once

#include <string>
#include <vector>

#include "model/graph/op.hpp"
#include "sim/cost/cost_model.hpp"

namespace tpsim::calibrate {

struct GemmSample {
  model::GemmShape shape;
  double seconds = 0;
  double bytes = 0;  // HBM bytes; 0: bf16 operands and output

  double hbm_bytes() const { return bytes > 0 ? bytes : model::gemm_bytes(shape, 2.0); }
};

struct GemmFit {
  sim::GemmParams params;
  double rms_log_error = 0;      // sqrt(mean(ln(predicted / measured)^2))
  double max_abs_error_pct = 0;  // worst |predicted / measured - 1| in percent
  size_t points = 0;
};

// Minimises the squared log error over efficiency, hbm_efficiency and overhead (Levenberg-Marquardt
// from fixed starts, deterministic); tile parameters are kept from `start`.
GemmFit fit_gemm(const std::vector<GemmSample>& samples, const sim::GpuSpec& gpu, const sim::GemmParams& start);

}  // namespace tpsim::calibrate
