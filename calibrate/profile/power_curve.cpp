// Assumed power curves and transfer energies, each value with its reason.
#include "calibrate/profile/power_curve.hpp"

#include "base/units.hpp"

namespace tpsim::calibrate {
namespace {

// Published nvidia-smi snapshots: H100 80 GB HBM3 boards idle at 68-73 W of their 700 W, A100 SXM4 at
// 46-51 W of 400 W: about a tenth of the board power.
constexpr double kIdleShareOfBoard = 0.1;
// Dynamic power ~ C V^2 f with the voltage following the clock through the DVFS range.
constexpr double kAssumedExponent = 3.0;
// One end of an NVLink4 lane (100 Gb/s PAM4): half of a 112 Gb/s PAM4 transceiver's 5.6 pJ/bit (TX and RX
// with DSP, 5 nm, VLSI 2022); NVIDIA publishes no NVLink figure.
constexpr double kLinkEndPjPerBit = 2.8;

}  // namespace

std::optional<sim::PowerParams> assumed_power_curve(const sim::GpuSpec& gpu, double measured_at_W,
                                                    const std::optional<sim::PowerParams>& kept) {
  if (gpu.board_power_W <= 0 || measured_at_W <= 0) return std::nullopt;
  sim::PowerParams p;
  p.measured_at_W = measured_at_W;
  p.idle_W = kIdleShareOfBoard * gpu.board_power_W;
  p.exponent = kept ? kept->exponent : kAssumedExponent;
  p.transfer_pJ_per_bit = assumed_transfer_pJ_per_bit(gpu);
  p.sustained_ratio = gpu.sustained_gemm_ratio;
  return p;
}

double assumed_transfer_pJ_per_bit(const sim::GpuSpec& gpu) {
  return gpu.hbm_pJ_per_bit > 0 ? gpu.hbm_pJ_per_bit + kLinkEndPjPerBit : 0.0;
}

std::string assumed_transfer_energy_source(const sim::GpuSpec& gpu) {
  if (gpu.hbm_pJ_per_bit <= 0) {
    return "none: the GPU preset " + gpu.name + " gives no hbm_pJ_per_bit (transfers take no power from compute)";
  }
  return "sourced: the preset's HBM access energy (" + model::format_number("%g", gpu.hbm_pJ_per_bit) +
         " pJ/bit, board level) plus one end of an NVLink lane (" + model::format_number("%g", kLinkEndPjPerBit) +
         " pJ/bit: half of a 112G PAM4 transceiver's 5.6, "
         "VLSI 2022); fit it on tpsim-real overlap --partner memcpy_peer points";
}

std::string sustained_ratio_source(const sim::GpuSpec& gpu) {
  if (gpu.sustained_gemm_ratio <= 0) {
    return "none: " + gpu.name +
           "'s preset gives no sustained_gemm_ratio (each compute-bound kernel at the clock "
           "the limit allows one alone; real/scripts/torch_probes.py's sustained probe measures it)";
  }
  return "from " + gpu.name +
         "'s preset, whose comment says whether it was measured or assumed (sustained_gemm_ratio: " +
         "GEMMs back to back for seconds at board power over one alone)";
}

std::string idle_power_source() {
  return "assumed: a tenth of the board power (published nvidia-smi snapshots: H100 80 GB HBM3 idles at 68-73 W of "
         "700 W, A100 SXM4 at 46-51 W of 400 W)";
}

std::string power_exponent_source() {
  return "assumed: dynamic power ~ f V^2 with the voltage following the clock (fit it on tpsim-real's clock and "
         "power readings under several limits)";
}

}  // namespace tpsim::calibrate
