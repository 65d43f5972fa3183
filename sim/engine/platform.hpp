// Builds the SimGrid platform of one fabric (fabric.hpp): a host per GPU (with one power state per number of
// concurrent SM-driven comm kernels and level of transfer power draw), a split-duplex port per GPU into a non-blocking
// switch (and, on PCIe, a shared host-bridge link; on ib-rail across nodes, a split-duplex NIC per GPU that flows
// between nodes cross instead),
// an HBM link per GPU that memory-bound kernels and all NVLink traffic of that GPU share (a
// memory-bound kernel is a flow from the GPU to its "hbm" host). Pure latencies are SimGrid timers, no hosts'
// (engine.cpp). Must be called inside a fresh s4u::Engine.
#pragma once

#include <utility>
#include <vector>

#include <simgrid/s4u.hpp>

#include "sim/cost/cost_model.hpp"

namespace tpsim::sim {

// A GPU host runs at kWorkRate work units per second at full speed: an op of d seconds is d*kWorkRate units.
inline constexpr double kWorkRate = 1e12;
// A GPU host's compute speed depends on the SMs the comm kernels running hold, one kernel per communication
// stream (comm, copy, comm2, copy2, comm3, copy3, comm4) at most ...
inline constexpr int kMaxConcurrentComm = 7;
// ... and on the power its port's transfers draw (sim/cost/power_limit.hpp), in this many steps from none to
// both directions at the port's rate (and as many more steps of that size as the most HBM accesses a collective
// adds beyond a copy's need, sim/cost/hbm_traffic.hpp).
inline constexpr int kTransferPowerSteps = 64;

// The GPU hosts' power states: (SMs held by comm kernels, one of sm_totals) x (transfer draw level), one
// level without a transfer draw to model.
struct PowerStates {
  int levels = 1;
  double watts_per_level = 0;
  std::vector<int> sm_totals = {0};  // ascending (sim/sm_sharing.hpp)
  // The state for `taken_sms` SMs held by comm kernels beside transfers drawing `transfer_W`.
  int state(int taken_sms, double transfer_W) const;
};

struct Platform {
  PowerStates states;
  std::vector<simgrid::s4u::Host*> gpus;
  std::vector<simgrid::s4u::Host*> memories;  // flow endpoints of each GPU's memory-bound kernels
  // With outside groups: the rest of a group outside the simulated GPUs, reached through each GPU's NIC, or
  // through its NVLink port (a group inside the node).
  simgrid::s4u::Host* outside_network = nullptr;
  simgrid::s4u::Host* outside_nvlink = nullptr;
};

// Sets the network model configuration (pure alpha-beta) on the engine; call before building zones.
void configure_engine(simgrid::s4u::Engine& engine);
// The cost model's fabric: a port per GPU into a non-blocking switch, on PCIe a shared host bridge
// that every peer flow also crosses, and on ib-rail a NIC per GPU for flows between nodes.
// `outside_groups`: routes from every GPU to the outside hosts and back (a data-parallel group's collectives).
// `routes`: the (source, destination) GPU pairs flows travel between, routed (each route costs memory: a simulation
// routes what it uses, not every pair of a large group). `comm_sms`: the SMs each kind of SM-driven comm kernel of
// the program holds (the compute states cover every total of up to kMaxConcurrentComm of them).
Platform build_platform(int gpus, const CostModel& cost, bool outside_groups,
                        const std::vector<std::pair<int, int>>& routes, const std::vector<int>& comm_sms = {});
// Bandwidth of a GPU's HBM link: HBM bandwidth times the profile's memory-bound efficiency.
double kHbmLinkBps(const CostModel& cost);

}  // namespace tpsim::sim
