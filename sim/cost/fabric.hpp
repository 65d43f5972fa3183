// The fabric that connects the GPUs of one TP group: an NVSwitch node (DGX / HGX, 8 GPUs), an NVL72
// rack domain (72 NVLink-5 GPUs behind NVSwitch trays; several racks join through a NIC per GPU), PCIe (no NVLink: each
// GPU's x16 port into a host bridge that all peer traffic crosses), or ib-rail (NVSwitch nodes joined by one NIC per
// GPU, rail-optimised, under a non-blocking fat tree). Ranks fill nodes in order: rank r is local GPU r % gpus_per_node
// of node r / gpus_per_node.
#pragma once

#include <string>
#include <vector>

#include "sim/cost/gpu_spec.hpp"

namespace tpsim::sim {

// ib-rail's (and nvl72 racks') default NIC: one ConnectX-7 NDR NIC per GPU, 400 Gb/s = 50 GB/s each way
// (interconnect_specs.csv, DGX H100 "scale-out bandwidth per GPU"; the B200 EFA v4 links are 50 GB/s too).
inline constexpr double kDefaultRailNicBps = 50e9;

enum class FabricKind { kNvSwitch, kNvl72, kPcie, kIbRail };

struct Fabric {
  FabricKind kind = FabricKind::kNvSwitch;
  std::string name = "nvswitch";
  int max_gpus = 8;
  double port_Bps = 0;              // each GPU's port into its node's switch, one direction
  double bridge_Bps = 0;            // the shared host bridge every peer flow crosses (0: none)
  bool in_switch_reduction = true;  // NVLS possible inside a node (NVSwitch fabrics)
  int nodes = 1;
  int gpus_per_node = 8;  // GPUs behind one switch (the whole domain for single-node fabrics)
  double nic_Bps = 0;     // ib-rail and nvl72 racks: each GPU's NIC, one direction
  // ib-rail: the fat tree's oversubscription above the rail (leaf) switches. Each leaf's uplink to the
  // spine carries nodes x nic_Bps / oversubscription each way; only flows between different rails
  // (local GPU i of one node to local GPU j != i of another) cross it. 1: non-blocking.
  double oversubscription = 1;

  int node_of(int rank) const { return rank / gpus_per_node; }
  // Whether ranks 0..ranks-1 span more than one node (only multi-node fabrics have several).
  bool spans_nodes(int ranks) const { return nodes > 1 && ranks > gpus_per_node; }
};

// The NVSwitch node of a GPU: its NVLink port, gpus_per_node GPUs.
Fabric nvswitch_fabric(const GpuSpec& gpu);

// The fabric a measurement over `nodes` nodes ran on: one NVSwitch node, or ib-rail nodes with NICs
// of `nic_Bps` (0: the default).
Fabric measured_fabric(const GpuSpec& gpu, int nodes, double nic_Bps);

// What hardware: says about the fabric besides the GPU.
struct FabricRequest {
  std::string topology = "nvswitch";  // nvswitch | nvl72 | pcie | ib-rail
  int nodes = 1;                      // ib-rail, and nvl72 racks
  double nic_Bps = 0;                 // ib-rail, nvl72 racks: 0 takes a 400 Gb/s NIC per GPU
  double oversubscription = 1;        // ib-rail: above the leaves (1: non-blocking)
};

// Throws InputError (without a location: the caller adds it) for unknown names, a GPU the fabric
// cannot hold (nvl72 needs NVLink 5), nodes > 1 on a single-domain fabric, or an oversubscription
// below 1 or off ib-rail.
Fabric resolve_fabric(const FabricRequest& request, const GpuSpec& gpu);
inline Fabric resolve_fabric(const std::string& topology, const GpuSpec& gpu) {
  return resolve_fabric(FabricRequest{topology}, gpu);
}

const std::vector<std::string>& fabric_names();

// The part of `fabric` one group of `ranks` GPUs spans, filling nodes in order (a job's TP group: the engine
// simulates it alone): the whole fabric for a one-domain fabric.
Fabric group_fabric(const Fabric& fabric, int ranks);

// Why a job of tp x cp x pp x dp GPUs (TP innermost, then the CP members, the data-parallel replicas, the pipeline
// stages, filling nodes in order) cannot run on `fabric` ("" when it can): more GPUs than it holds, TP groups that
// would straddle nodes, or nodes it would leave empty.
std::string job_placement_problem(const Fabric& fabric, int tp, int pp, int dp, const std::string& gpu_name,
                                  int cp = 1);

// Why `ranks` GPUs, filling nodes in order, cannot form one group on `fabric` ("" when they can): more
// than it holds, more than one node without filling whole nodes, or fewer nodes than the fabric has.
std::string group_placement_problem(const Fabric& fabric, int ranks, const std::string& gpu_name);

}  // namespace tpsim::sim
