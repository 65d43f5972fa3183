// Fits NCCL's tree all-reduce (profile section `tree`): every hop's step latency and link efficiency,
// from all-reduces run as tree. Its idle-fabric time, tpsim's closed form of the tree plan, is linear in
// both: t = c + steps x latency + (sum over steps of the busiest port's or NIC's bytes / bandwidth) /
// efficiency, c the base profile's NCCL call latency.
#pragma once

#include <vector>

#include "calibrate/fits/ring_fit.hpp"
#include "sim/cost/gpu_spec.hpp"
#include "sim/cost/profile.hpp"

namespace tpsim::calibrate {

struct TreeSample {
  int ranks = 0;
  int nodes = 1;
  double nic_Bps = 0;  // 0: ib-rail's default NIC
  double tensor_bytes = 0;
  double seconds = 0;
  double framework_s = 0;  // host time per call inside `seconds` (RingSample::framework_s)
};

// `base` supplies the chunk size and call latency; samples may mix systems (rank and node counts).
RingFit fit_tree(const std::vector<TreeSample>& samples, const sim::GpuSpec& gpu, const sim::CostProfile& base);

// The tree plan's idle-fabric time under `params` for one sample's system, plus the sample's framework time.
double tree_seconds(const sim::TransportParams& params, const TreeSample& sample, const sim::GpuSpec& gpu,
                    const sim::CostProfile& base);

}  // namespace tpsim::calibrate
