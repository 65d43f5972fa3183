// A GPU's public peak numbers (tensor FLOP/s, HBM, SMs, NVLink), from a preset or an inline mapping (read by
// input/gpu_reader.cpp).
#pragma once

#include <string>

#include "sim/cost/runtime_memory.hpp"

namespace tpsim::sim {

inline constexpr double kGiB = 1024.0 * 1024 * 1024;

struct GpuSpec {
  std::string name;
  double peak_bf16_flops = 0;   // dense, FLOP/s
  double peak_fp8_flops = 0;    // dense e4m3, FLOP/s (0: no FP8 tensor cores, or not given)
  double hbm_Bps = 0;           // bytes/s
  double hbm_bytes = 0;         // as sold (80 GB)
  double hbm_usable_bytes = 0;  // what CUDA reports as the device's total (0: not given; hbm_bytes stands in)
  RuntimeMemorySpec runtime_memory;
  int sm_count = 0;
  double nvlink_Bps = 0;  // per GPU, one direction
  double pcie_Bps = 0;    // the GPU's PCIe x16 host interface, one direction (0: not given)
  int gpus_per_node = 8;
  bool switch_reduction = true;  // its NVSwitch reduces in the switch (NVLS: third-generation NVSwitch on)
  // CUDA compute capability x 10 (80 Ampere, 90 Hopper, 100 Blackwell); 0 when not given. NCCL's tuner
  // constants are per architecture.
  int compute_capability = 0;
  bool nvswitch = true;  // its NVLink ports reach an NVSwitch (false: bridges join pairs, as on PCIe cards)
  // Power: the board's maximum (TDP) and the limit it runs at (its default, or hardware.power_limit_W);
  // 0 when not given. Below the power a profile was measured at, compute-bound kernels clock down.
  double board_power_W = 0;
  double power_limit_W = 0;
  // Board-level energy of one bit of HBM access (memory controller and DRAM), pJ; 0 when not given. With
  // the link's share it is what a transfer through the GPU draws per bit (calibrate/profile/power_curve.hpp).
  double hbm_pJ_per_bit = 0;
  // The share of the short-benchmark GEMM rate that GEMMs back to back for seconds hold at board power (the power
  // limiter engaged); 0 when not measured. Profiles carry it as power.sustained_ratio (power_curve.hpp).
  double sustained_gemm_ratio = 0;
};

// The HBM a job can fill: the usable capacity where the GPU gives it, else its HBM as sold.
inline double usable_hbm_bytes(const GpuSpec& gpu) {
  return gpu.hbm_usable_bytes > 0 ? gpu.hbm_usable_bytes : gpu.hbm_bytes;
}

}  // namespace tpsim::sim
