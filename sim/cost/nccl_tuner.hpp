// NCCL's choice of algorithm and protocol for one collective call, as NCCL 2.27's tuner makes it: for
// each (algorithm, protocol) a latency and a bandwidth from NCCL's own constants (src/graph/tuning.cc)
// and the channels its topology search finds on the fabric (src/graph/search.cc); NCCL runs the pair of
// least predicted time. This decides what runs; the calibration profile says how long it takes.
// Modelled: ring, tree and NVLS on NVSwitch, NVL72, PCIe and rail-optimised fabrics. Left out: CollNet
// (SHARP switches), NVLS-tree (NVLS across nodes needs CollNet or NVLS-tree, not modelled), PAT (one GPU
// per node), tuner plugins, NCCL_ALGO / NCCL_PROTO lists beyond one forced protocol.
#pragma once

#include <string>
#include <vector>

#include "model/graph/op.hpp"
#include "sim/cost/fabric.hpp"
#include "sim/cost/gpu_spec.hpp"

namespace tpsim::sim {

// The channels NCCL's topology search finds for one algorithm, and each channel's bandwidth inside a
// node and across nodes, in NCCL's GB/s.
struct NcclGraph {
  int channels = 0;
  double bw_intra_GBps = 0;
  double bw_inter_GBps = 0;
};

// What NCCL's tuner sees of a group of ranks on a fabric.
struct NcclSystem {
  int compute_capability = 0;  // 80, 90, 100
  int ranks = 0;
  int nodes = 1;
  bool nvlink = true;  // paths inside a node are NVLink (false: PCIe through the host)
  bool nvls = false;   // NVLS possible: an NVSwitch that reduces, sm90 or later, one node
  bool ll128 = true;   // LL128 enabled (NVLink paths inside nodes)
  NcclGraph ring, tree, nvls_graph;
};

// One (algorithm, protocol) pair as NCCL's tuner prices it (NCCL's estimate, not tpsim's prediction).
struct NcclOption {
  model::CollectiveAlgorithm algorithm = model::CollectiveAlgorithm::kRing;  // kRing, kTree or kNvls
  model::Protocol protocol = model::Protocol::kSimple;                       // kLL, kLL128 or kSimple
  double latency_s = 0;
  double bandwidth_Bps = 0;  // bytes of the call per second
  double predicted_s = 0;    // latency + bytes / bandwidth, with NCCL's per-size corrections
};

// The system NCCL sees for `ranks` ranks placed on `fabric` in order. Throws InputError when the GPU
// has no compute_capability (NCCL's constants are per architecture).
NcclSystem nccl_system(const GpuSpec& gpu, const Fabric& fabric, int ranks);

// The pairs NCCL would consider for an all-reduce, all-gather or reduce-scatter of `bytes` (the full
// tensor), fastest first by NCCL's model (ties keep NCCL's order: tree, ring, NVLS; LL, LL128, Simple).
// A protocol other than kAuto keeps that protocol alone (NCCL_PROTO). Empty for other collectives.
std::vector<NcclOption> nccl_ranking(const NcclSystem& system, model::CollectiveKind kind, double bytes,
                                     model::Protocol protocol = model::Protocol::kAuto);

// NCCL's own latency per ring step of `protocol` (kLL, kLL128, kSimple) over NVLink or PCIe (hwLat).
double nccl_ring_step_latency_s(bool nvlink, model::Protocol protocol);

// NCCL's own base latency per ring call of `protocol` (kLL, kLL128, kSimple; baseLat): its device time per call
// before the first step.
double nccl_ring_base_latency_s(model::Protocol protocol);

// "ring/LL", "nvls/Simple", ... as NCCL's logs name them.
std::string nccl_option_name(model::CollectiveAlgorithm algorithm, model::Protocol protocol);

}  // namespace tpsim::sim
