// Compute-bound kernels under a board power limit: the SM clock the limit allows, relative to the clock
// a profile's efficiencies were measured at. Ignores: clock boosts above the measured clock (a limit at or
// above the measured power keeps the profile's rates), and power drawn by concurrent transfers.
#pragma once

#include <string>

#include "sim/gpu_spec.hpp"
#include "sim/profile.hpp"

namespace tpsim::sim {

// f_limit / f_measured from P(f) = idle + (measured_at - idle) (f / f_measured)^exponent at P = limit_W;
// 1 when limit_W >= measured_at_W.
double clock_ratio_at(const PowerParams& power, double limit_W);

// The ratio for `gpu` at its power limit under `profile` (1 without a limit below the profile's power).
double compute_clock_ratio(const GpuSpec& gpu, const CostProfile& profile);

// Why `gpu`'s power limit cannot be modelled with `profile` (below its measured power without a power
// section, or not above its idle draw); empty when it can.
std::string power_limit_unsupported_reason(const GpuSpec& gpu, const CostProfile& profile);

}  // namespace tpsim::sim
