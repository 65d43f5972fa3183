// Kernel durations on an idle GPU: GEMMs (tiles, waves, split-K, roofline), FlashAttention, memory-bound ops.
// Compute-bound rates follow the SM clock a power limit allows (power_limit.hpp). Ignores: L2 reuse and
// kernel fusion.
#pragma once

#include <optional>
#include <string>

#include "model/graph/op.hpp"
#include "sim/cost/fabric.hpp"
#include "sim/cost/gpu_spec.hpp"
#include "sim/cost/power_limit.hpp"
#include "sim/cost/profile.hpp"

namespace tpsim::sim {

// How a GEMM maps onto the SMs; exposed so tests and reports can show it.
struct GemmTiling {
  int64_t tiles = 0;           // output tiles
  int64_t splits = 1;          // split-K factor
  int64_t waves = 0;           // ceil(tiles x splits / SMs)
  double wave_efficiency = 0;  // busy SM-slots over all SM-slots of the waves
  double tile_efficiency = 0;  // useful output elements over padded tile elements
};

// A kernel's cost on an idle GPU: launch overhead, then the slower of its tensor-core work and its
// HBM traffic (the roofline). The engine runs compute-bound kernels on the SMs and memory-bound
// ones as traffic through the GPU's HBM, which copy-engine and NVLink traffic share.
struct KernelCost {
  double overhead_s = 0;
  double compute_s = 0;       // at full SM speed
  double memory_bytes = 0;    // HBM bytes read and written
  double hbm_efficiency = 1;  // fraction of HBM bandwidth this kernel reaches alone
  double memory_s = 0;        // memory_bytes / (HBM x hbm_efficiency)
  bool memory_bound() const { return memory_s > compute_s; }
  double seconds() const { return overhead_s + (memory_bound() ? memory_s : compute_s); }
};

class CostModel {
 public:
  // The GPU on `fabric` (default: its NVSwitch node).
  CostModel(GpuSpec gpu, CostProfile profile, std::optional<Fabric> fabric = std::nullopt)
      : gpu_(std::move(gpu)),
        profile_(std::move(profile)),
        fabric_(fabric ? *fabric : nvswitch_fabric(gpu_)),
        clock_ratio_(compute_clock_ratio(gpu_, profile_)) {}

  // The SM clock compute-bound rates run at, relative to the clock the profile's efficiencies were measured at: a
  // kernel alone's under the GPU's power limit (compute_clock_ratio, power_limit.hpp), unless set.
  double clock_ratio() const { return clock_ratio_; }
  // This model with compute-bound rates at `ratio` (a program's clock under the limiter's window,
  // sim/engine/runner/window_clock.hpp).
  CostModel at_clock(double ratio) const {
    CostModel copy = *this;
    copy.clock_ratio_ = ratio;
    return copy;
  }

  const GpuSpec& gpu() const { return gpu_; }
  const CostProfile& profile() const { return profile_; }
  const Fabric& fabric() const { return fabric_; }
  // Each GPU's port into the fabric, one direction (NVLink, or PCIe on a pcie fabric).
  double port_Bps() const { return fabric_.port_Bps; }

  GemmTiling gemm_tiling(const model::GemmShape& shape) const;
  double gemm_seconds(const model::GemmShape& shape, double bytes, bool fp8 = false) const;
  // Its tensor-core time alone: FLOPs over the full-wave rate (a grouped GEMM's: gemm.grouped_efficiency's) and
  // the wave and tile efficiencies.
  double gemm_compute_seconds(const model::GemmShape& shape, bool fp8) const;
  // Why this GPU and profile cannot run fp8 GEMMs (no fp8 peak, no gemm.fp8_efficiency); empty if they can.
  std::string fp8_unsupported_reason() const;
  // Why they cannot run fp8 attention (no fp8 peak, no attention.fp8_efficiency); empty if they can.
  std::string fp8_attention_unsupported_reason() const;
  // Empty when the profile can run grouped GEMMs (gemm.grouped_efficiency), else why not.
  std::string grouped_gemm_unsupported_reason() const;
  // Empty when the profile can run a hybrid stack's linear-attention kernels (linear_attention), else why not.
  std::string linear_attention_unsupported_reason() const;
  // Empty when the profile can run attention's backward, else why not.
  std::string attention_backward_unsupported_reason() const;
  double memory_seconds(double bytes) const;
  // Cost of a kernel op alone on the GPU (GEMM, attention or memory-bound), and its duration.
  KernelCost kernel_cost(const model::Op& op) const;
  double kernel_seconds(const model::Op& op) const { return kernel_cost(op).seconds(); }

  // A point-to-point step of `bytes` over one link, alone: latency + bytes / (link x efficiency).
  double step_seconds(model::Transport transport, double bytes) const;
  const TransportParams& transport(model::Transport transport) const;
  // The transport of a point-to-point step every rank of the group takes at once (an exchange op): a
  // copy-engine pull at the profile's all-ranks efficiency where it has one.
  TransportParams exchange_transport(model::Transport transport) const;

 private:
  double tensor_rate(bool fp8) const;
  // FLOP/s of the attention kernel's forward, causal (over long sequences) or (`unmasked`: no diagonal in the block)
  // without a mask.
  double attention_rate(bool fp8, bool unmasked) const;
  double attention_forward_seconds(const model::Op& op) const;  // a forward op's tensor-core time, mask and all
  KernelCost linear_attention_cost(const model::Op& op) const;
  double attention_backward_rate() const;                        // FLOP/s of its backward without a mask
  double attention_backward_seconds(const model::Op& op) const;  // a backward op's tensor-core time, mask and all
  std::string fp8_reason(const std::optional<double>& efficiency, const std::string& key) const;

  GpuSpec gpu_;
  CostProfile profile_;
  Fabric fabric_;
  double clock_ratio_ = 1;
};

}  // namespace tpsim::sim
