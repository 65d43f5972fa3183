// The power section a profile starts from: the power its compute rates were measured at, and the
// assumed curve below it (sim/cost/power_limit.hpp), until tpsim-real's clock and power readings fit one.
#pragma once

#include <optional>
#include <string>

#include "sim/cost/gpu_spec.hpp"
#include "sim/cost/profile.hpp"

namespace tpsim::calibrate {

// Measured at `measured_at_W`, idle a tenth of the board power, the exponent of `kept` (the curve it
// replaces) or 3, and the GPU's assumed transfer energy; absent when the GPU's preset gives no board power.
std::optional<sim::PowerParams> assumed_power_curve(const sim::GpuSpec& gpu, double measured_at_W,
                                                    const std::optional<sim::PowerParams>& kept = std::nullopt);

// A transfer's energy per bit through a GPU (power.transfer_pJ_per_bit): the preset's HBM access energy
// and one end of a link; 0 where the preset gives no HBM energy.
double assumed_transfer_pJ_per_bit(const sim::GpuSpec& gpu);
std::string assumed_transfer_energy_source(const sim::GpuSpec& gpu);

// The source lines of that curve's values, for the profile YAML.
std::string idle_power_source();
// Where power.sustained_ratio comes from: the GPU preset's sustained_gemm_ratio, or why it is 0 (none given).
std::string sustained_ratio_source(const sim::GpuSpec& gpu);
std::string power_exponent_source();

}  // namespace tpsim::calibrate
