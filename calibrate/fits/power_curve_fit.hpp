// Fits power.idle_W and power.exponent on GEMMs whose NVML readings (gpu_state) give the SM clock and board
// power they ran at, the same shape timed under several power limits: the curve the simulator's clock
// derate follows (sim/cost/power_limit.hpp).
#pragma once

#include <vector>

#include "base/measurement.hpp"
#include "calibrate/profile/profile_fit.hpp"
#include "sim/cost/gpu_spec.hpp"

namespace tpsim::calibrate {

// Whether GEMM point `m` ran under an enforced power limit below `gpu`'s own (its gpu_state says so): its time
// is the clock's at that limit, not the compute rate the profile's efficiency describes.
bool ran_below_power_limit(const Measurement& m, const sim::GpuSpec& gpu);

// `gemms`: this GPU's GEMM points. The shape timed most often with NVML readings, at four points or more (three
// values are fitted) whose median powers span 10% or more, fits the curve P = idle_W + A f^exponent (median
// clock f, median power P; the log clock's squared error, idle_W searched in 0.5 W steps below the smallest
// power, A and the exponent by least squares). A point's error is its time as the fitted clock at its power
// would give it. Sets out.profile.power's idle_W and exponent and out.power_curve_source. Nothing is fitted
// when no shape has such points, unless points ran below the GPU's power limit (an InputError says what is
// missing); an exponent outside [0.5, 8] is an InputError naming the points.
void fit_power_curve(const std::vector<const Measurement*>& gemms, const sim::GpuSpec& gpu, ProfileFit& out);

}  // namespace tpsim::calibrate
