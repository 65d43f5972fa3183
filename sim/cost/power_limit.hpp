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

// The rate ratio r (to the profile's efficiencies) at which back-to-back compute-bound kernels draw limit_W, from
// P(r) = idle + (measured_at - idle) (r / a)^exponent, a the sustained_ratio (1 where the profile has none: the rates
// hold at measured_at_W); at most 1, and 1 when limit_W >= measured_at_W without a sustained_ratio.
double clock_ratio_at(const PowerParams& power, double limit_W);

// What compute-bound kernels draw above idle at rate ratio r on that curve: (measured_at - idle) (r / a)^exponent.
double compute_dynamic_W(const PowerParams& power, double ratio);

// Whether `profile` models the limiter's window (power.sustained_ratio set): a program's clock from its average draw
// (sim/engine/runner/window_clock.hpp), and transfers beside compute-bound kernels counted in that average.
bool windowed_power(const CostProfile& profile);

// `profile` as a short benchmark sees it: the limiter never engages, so no window (power.sustained_ratio 0): each
// compute-bound kernel at the curve's clock for the GPU's limit, beside transfers at what their draw leaves.
CostProfile short_benchmark_profile(CostProfile profile);

// The limit that binds `gpu` under `profile`: its power limit, else the power the profile was measured at.
double binding_limit_W(const GpuSpec& gpu, const PowerParams& power);

// A simulated program's draw over the limiter's window, summed over its GPUs: their time (the program's span on
// each), the time some compute-bound kernel ran on each, and the energy above idle of everything else (memory-bound
// kernels' HBM traffic, transfers through the ports).
struct WindowDraw {
  double span_s = 0;
  double compute_s = 0;
  double other_J = 0;
};

// The rate ratio at which the window's average draw meets the binding limit, the compute-bound time scaling as
// 1 / ratio from `simulated_ratio` (the clock `draw` was simulated at) and lengthening the span as much, the rest
// unchanged; between kMinClockRatio and 1. 1 without a power section or a sustained_ratio.
double window_clock_ratio(const GpuSpec& gpu, const CostProfile& profile, const WindowDraw& draw,
                          double simulated_ratio);

// The same ratio with the span held at the draw's (the compute-bound time still scaling as 1 / ratio): where it is
// above `simulated_ratio`, at or above window_clock_ratio, and the highest clock a run of the same program at a clock
// at or above `simulated_ratio` can find its window at, such a run's span being no longer and its compute-bound time
// no shorter than this one's scaled by the clock.
double held_span_clock_ratio(const GpuSpec& gpu, const CostProfile& profile, const WindowDraw& draw,
                             double simulated_ratio);

// The energy in joules of `bytes` HBM bytes read or written at the GPU's hbm_pJ_per_bit (board level).
double hbm_energy_J(const GpuSpec& gpu, double bytes);
// The energy of `bytes` moved each way through a GPU's port (2 x bytes at the profile's transfer_pJ_per_bit) and
// the HBM accesses a collective adds per incoming byte beyond a copy's (`extra_accesses`, hbm_traffic.hpp).
double transfer_energy_J(const GpuSpec& gpu, const CostProfile& profile, double bytes, double extra_accesses);

// The ratio of a compute-bound kernel alone (a short benchmark's) on `gpu` at its power limit under `profile`: 1
// without a limit below the profile's power, and 1 where the profile models the limiter's window (windowed_power: a
// kernel alone is over before the limiter engages; a program runs at its window's clock,
// sim/engine/runner/window_clock.hpp).
double compute_clock_ratio(const GpuSpec& gpu, const CostProfile& profile);

// The ratio compute-bound kernels back to back for seconds hold on `gpu` at its binding limit: clock_ratio_at of a
// windowed profile's curve, else compute_clock_ratio.
double back_to_back_clock_ratio(const GpuSpec& gpu, const CostProfile& profile);

// Watts a GPU draws moving `Bps` bytes per second of peer traffic through its HBM and port (both
// directions summed) at the profile's transfer_pJ_per_bit; 0 without a power section.
double transfer_power_W(const CostProfile& profile, double Bps);

// Watts `Bps` bytes per second of HBM accesses beyond a plain copy's draw (a collective staging its traffic in
// FIFO buffers, sim/cost/hbm_traffic.hpp) at the GPU's hbm_pJ_per_bit; 0 without the profile's power section.
double extra_hbm_power_W(const GpuSpec& gpu, const CostProfile& profile, double Bps);

// The SM clock of a compute-bound kernel beside transfers drawing `transfer_W`, relative to its clock
// alone, both on the profile's curve: what a compute-bound kernel beside transfers for the whole of a window runs at.
// The engine takes it beside each transfer only without the window (windowed_power: there the transfers count in
// the window's mean). Assumed:
// the kernel alone draws the whole limit it may (the profile's measured_at_W at its clock, or the GPU's lower limit),
// so the transfers' draw comes out of the SMs' dynamic power and the clock follows the profile's curve down. A limit
// above the measured power leaves headroom that absorbs the first watts. 1 without a power section or a transfer draw.
double clock_factor_beside_transfers(const GpuSpec& gpu, const CostProfile& profile, double transfer_W);

// Why `gpu`'s power limit cannot be modelled with `profile` (below its measured power without a power
// section, not above its idle draw, or so low that the clock falls below kMinClockRatio); empty when it can.
std::string power_limit_unsupported_reason(const GpuSpec& gpu, const CostProfile& profile);

}  // namespace tpsim::sim
