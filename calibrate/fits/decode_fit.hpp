// Serving engines' decode runs (measurement kind "decode") fit the memory-bound regime of their GPU's
// profile: at small batch every kernel of a decode step streams its weights or KV cache, so a run's time
// is, to first order, kernels x the per-kernel fixed time + bytes / (HBM bandwidth x efficiency), plus its
// collectives. The fit simulates each run as `tpsim run` would (phase generate over the whole model) and
// sets gemm.hbm_efficiency = memory.hbm_efficiency and gemm.overhead_us = memory.overhead_us by least
// squares on the runs' relative errors; GEMM compute rates, collectives and launches keep their values.
#pragma once

#include <string>
#include <vector>

#include "base/measurement.hpp"
#include "calibrate/profile/profile_fit.hpp"
#include "model/scenario.hpp"
#include "sim/cost/profile.hpp"

namespace tpsim::calibrate {

// The scenario a decode point ran: its model, GPU, power limit, implementation and collective, phase
// generate over the whole model with one tp variant named "measured". Throws InputError naming the
// point's origin where the point cannot be simulated.
model::Scenario decode_scenario(const Measurement& point);

// The whole generate's predicted time of a decode point under `profile`.
double predict_decode_seconds(const Measurement& point, const sim::CostProfile& profile);
// The same for the point's scenario parsed already (decode_scenario).
double predict_decode_seconds(const Measurement& point, const model::Scenario& scenario,
                              const sim::CostProfile& profile);

// Fits the memory-bound regime on `points` (decode kind, all of `out.profile`'s GPU; two or more) and
// records the fit as component "decode" with its per-point errors and, from four points, the error on the
// odd points of a fit on the even ones. Throws InputError when the points cannot separate the two values
// or imply values outside their ranges.
void fit_decode(const std::vector<const Measurement*>& points, ProfileFit& out);

}  // namespace tpsim::calibrate
