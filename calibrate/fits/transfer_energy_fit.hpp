// Fits power.transfer_pJ_per_bit on GEMMs beside peer copies (tpsim-real overlap --partner memcpy_peer): the
// GEMM slows by the clock the copy's power draw leaves it under the power limit (sim/cost/power_limit.hpp).
#pragma once

#include <vector>

#include "base/measurement.hpp"
#include "calibrate/profile/profile_fit.hpp"
#include "sim/cost/gpu_spec.hpp"
#include "sim/cost/profile.hpp"

namespace tpsim::calibrate {

// A GEMM of `gemm_s` alone beside a one-way peer copy of `bytes` that takes `copy_s` alone: it runs at the
// clock the copy's draw leaves while the copy runs (the copy keeps its rate), at full clock after.
double gemm_beside_copy_seconds(const sim::GpuSpec& gpu, const sim::CostProfile& profile, double gemm_s, double copy_s,
                                double bytes);

// Two points or more (one would fit exactly and say nothing of its error) on a profile with a power section:
// the energy per bit whose predicted overlapped GEMM times fit best (squared log error), searched in steps of
// 0.05 pJ/bit up to 100. Sets out.profile.power->transfer_pJ_per_bit and its source; appends the fit's errors.
void fit_transfer_energy(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu, ProfileFit& out);

}  // namespace tpsim::calibrate
