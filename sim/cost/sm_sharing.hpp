// What a kernel costs beside an SM-driven comm kernel: the SMs NCCL's channels hold (one CTA each, per algorithm
// and size, as NCCL launches them), the share of the GPU a compute-bound kernel keeps on the SMs left, and the tail
// a GEMM pays for its tiles on the shared SMs. Ignores: the HBM bandwidth the comm kernel's FIFO traffic takes beyond
// its NVLink bytes (its power is drawn: sim/cost/hbm_traffic.hpp).
#pragma once

#include <vector>

#include "model/graph/op.hpp"
#include "sim/cost/cost_model.hpp"

namespace tpsim::sim {

// SMs NCCL's kernel for `algorithm` under `protocol` holds while it runs, for `bytes` over `ranks` ranks. NVLS:
// the profile's nvls_sms whatever the size; point-to-point: its p2p_sms; rings and trees (and the custom one-shot /
// two-shot and multimem kernels, assumed alike): the profile's nccl.sms, fewer below NCCL's per-channel threshold
// (NVIDIA/nccl src/enqueue.cc, topoGetAlgoInfo: a channel is dropped while bytes < channels x threads x
// threadThreshold, the threads and thresholds of src/graph/tuning.cc and src/include/device.h).
int nccl_kernel_sms(const CostProfile& profile, model::CollectiveAlgorithm algorithm, model::Protocol protocol,
                    double bytes, int ranks);

// The share of its alone rate a compute-bound kernel keeps while comm kernels hold `taken_sms` of the GPU's SMs:
// the SMs left (the partner's CTAs hold theirs exclusively), never below 5% (a guard: comm kernels never take
// every SM; not a measured value).
double compute_share_left(int sm_count, int taken_sms);

// Whether compute-bound `op` has more tile work (tiles x splits; other kernels: any) than `sms_left` SMs take in
// one wave: only then do some of its CTAs sit on, or wait for, the SMs comm kernels hold, and pay the tail below.
bool spills_past_sms(const CostModel& cost, const model::Op& op, int sms_left);
// The same with a GEMM's tiling known (cost.gemm_tiling(op.gemm); unread for other kernels).
bool spills_past_sms(const model::Op& op, const GemmTiling& tiling, int sms_left);

// Extra time of GEMM `op` (cost `k` alone) when it ran beside an SM-driven comm kernel: the profile's
// gemm.shared_tail_tiles of its tile time (its compute time over its waves on the whole GPU); 0 for other kernels,
// memory-bound ones, and profiles without a tail.
double shared_tail_seconds(const CostModel& cost, const model::Op& op, const KernelCost& k);
// The same with a GEMM's tiling known (cost.gemm_tiling(op.gemm); unread for other kernels).
double shared_tail_seconds(const CostProfile& profile, const model::Op& op, const GemmTiling& tiling,
                           const KernelCost& k);

// The distinct totals of SMs the comm kernels of `per_kernel_sms` can hold at once, up to `max_concurrent` of them
// (capped at `sm_count`), ascending, 0 first: the GPU hosts' compute states.
std::vector<int> sm_totals(const std::vector<int>& per_kernel_sms, int max_concurrent, int sm_count);

}  // namespace tpsim::sim
