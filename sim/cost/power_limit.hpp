// Compute-bound kernels under a board power limit: the SM clock the limit allows, relative to the clock
// a profile's efficiencies were measured at, and the clock left to them beside transfers that draw power
// of their own. Ignores: clock boosts above the measured clock (a limit at or above the measured power
// keeps the profile's rates), and the draw of memory-bound kernels on other streams.
#pragma once

#include <string>

#include "sim/cost/gpu_spec.hpp"
#include "sim/cost/profile.hpp"

namespace tpsim::sim {

// The bound of an energy per transferred bit (an HBM access, a link lane, or both): such energies are a few to
// tens of pJ/bit, so above 100 a value is a typo. Readers refuse above it; calibrate searches up to it.
inline constexpr double kMaxEnergyPjPerBit = 100;

// The lowest SM clock a power limit may leave, relative to the clock a profile was measured at: an H200's lowest SM
// clock (345 MHz, nvidia-smi at idle) over its clock under the 700 W limit its rates were measured at (a median of
// 1496 MHz), real/results/h200-2026-12-04. No limit clocks a GPU lower: the driver refuses limits below the board's
// minimum power limit, and the power curve would be extrapolated far past any measured clock.
inline constexpr double kMinClockRatio = 345.0 / 1496.0;

// f_limit / f_measured from P(f) = idle + (measured_at - idle) (f / f_measured)^exponent at P = limit_W;
// 1 when limit_W >= measured_at_W.
double clock_ratio_at(const PowerParams& power, double limit_W);

// The ratio for `gpu` at its power limit under `profile` (1 without a limit below the profile's power).
double compute_clock_ratio(const GpuSpec& gpu, const CostProfile& profile);

// Watts a GPU draws moving `Bps` bytes per second of peer traffic through its HBM and port (both
// directions summed) at the profile's transfer_pJ_per_bit; 0 without a power section.
double transfer_power_W(const CostProfile& profile, double Bps);

// Watts `Bps` bytes per second of HBM accesses beyond a plain copy's draw (a collective staging its traffic in
// FIFO buffers, sim/cost/hbm_traffic.hpp) at the GPU's hbm_pJ_per_bit; 0 without the profile's power section.
double extra_hbm_power_W(const GpuSpec& gpu, const CostProfile& profile, double Bps);

// The SM clock of a compute-bound kernel beside transfers drawing `transfer_W`, relative to its clock
// alone. Assumed: the kernel alone draws the whole limit it may (the profile's measured_at_W at its clock,
// or the GPU's lower limit), so the transfers' draw comes out of the SMs' dynamic power and the clock
// follows the profile's curve down. A limit above the measured power leaves headroom that absorbs the
// first watts. 1 without a power section or a transfer draw.
double clock_factor_beside_transfers(const GpuSpec& gpu, const CostProfile& profile, double transfer_W);

// Why `gpu`'s power limit cannot be modelled with `profile` (below its measured power without a power
// section, not above its idle draw, or so low that the clock falls below kMinClockRatio); empty when it can.
std::string power_limit_unsupported_reason(const GpuSpec& gpu, const CostProfile& profile);

}  // namespace tpsim::sim
