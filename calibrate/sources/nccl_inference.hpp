// The algorithm and protocol NCCL ran, for collective measurements that do not say (nccl-tests logs run
// without NCCL_ALGO / NCCL_PROTO): NCCL's tuner (sim/cost/nccl_tuner.hpp) on the point's GPU, ranks and nodes.
#pragma once

#include <vector>

#include "base/measurement.hpp"
#include "sim/cost/gpu_spec.hpp"

namespace tpsim::calibrate {

// Sets `algorithm` and `protocol` where they are "unknown" on all-reduces, all-gathers and
// reduce-scatters measured on `gpu`, keeping a known one and choosing the other as NCCL would with it
// forced; provenance "nccl_choice" says so. NCCL's choice follows its own constants and the topology,
// not the measured times, so fitting the points and inferring again would choose the same: this one
// pass is the fixed point. Points of other GPUs, and algorithms NCCL's tuner here does not have
// (nvls_tree), are left as they are.
void infer_nccl_choices(std::vector<Measurement>& points, const sim::GpuSpec& gpu);

}  // namespace tpsim::calibrate
