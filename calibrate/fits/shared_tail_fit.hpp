// Fits gemm.shared_tail_tiles on GEMMs beside a copy kernel that held some SMs first (tpsim-real overlap
// --partner copy_kernel --copy-blocks N --partner-first): the partner's blocks hold their SMs exclusively, the GEMM
// runs on the SMs left at that share of its alone rate until the partner ends, then on all of them, and a GEMM that
// ran beside it ends a tail of this many tile times later (sim/sm_sharing.hpp). A partner holding every SM is
// waited for (no tail).
#pragma once

#include <vector>

#include "base/measurement.hpp"
#include "calibrate/profile/profile_fit.hpp"
#include "sim/cost/gpu_spec.hpp"

namespace tpsim::calibrate {

// gemm.shared_tail_tiles as fit_shared_tail gives it on our H200 points (real/results/h200-2026-12-04/
// overlap_partner_first, 24 points: max error 7.8%; tools/refit_profiles.sh fits the h200-sxm profile on them and a
// test refits this value), carried to the profiles fitted without such points.
inline constexpr double kH200SharedTailTiles = 1.11;

// Whether `m` is such a point: kind overlap, pattern copy_kernel, details.blocks and details.partner_first true.
bool is_partner_first_copy_kernel(const Measurement& m);

// The GEMM's time beside the partner over its time alone, as the model above gives it with `tail_tiles`; its tiles
// and waves as `profile`'s tiling maps it onto `gpu`.
double predicted_shared_slowdown(const Measurement& m, double tail_tiles, const sim::GpuSpec& gpu,
                                 const sim::CostProfile& profile);

// The tail (0 to 4 tile times, in hundredths) whose largest error over `points` is least; each point's error in
// `fit` (name "gemm_shared_tail").
double fit_shared_tail(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu,
                       const sim::CostProfile& profile, ComponentFit& fit);

}  // namespace tpsim::calibrate
