// Builds the SimGrid platform of one fabric (fabric.hpp): a host per GPU (with one power state per number of
// concurrent SM-driven comm kernels), a split-duplex port per GPU into a non-blocking switch (and, on
// PCIe, a shared host-bridge link; on ib-rail across nodes, a split-duplex NIC per GPU that flows
// between nodes cross instead),
// an HBM link per GPU that memory-bound kernels and all NVLink traffic of that GPU share (a
// memory-bound kernel is a flow from the GPU to its "hbm" host), and a many-core "clock" host that
// times pure latencies. Must be called inside a fresh s4u::Engine.
#pragma once

#include <simgrid/s4u.hpp>
#include <vector>

#include "sim/cost_model.hpp"

namespace tpsim::sim {

// A GPU host runs at kWorkRate work units per second at full speed: an op of d seconds is d*kWorkRate units.
inline constexpr double kWorkRate = 1e12;
// The clock host: a pure delay of d seconds is an exec of d*kClockRate units there.
inline constexpr double kClockRate = 1e9;
// Power states 0..kMaxConcurrentComm: compute speed with that many SM comm kernels running, one per
// communication stream (comm, copy, comm2, copy2, comm3, copy3, comm4) at most.
inline constexpr int kMaxConcurrentComm = 7;

struct Platform {
  std::vector<simgrid::s4u::Host*> gpus;
  std::vector<simgrid::s4u::Host*> memories;  // flow endpoints of each GPU's memory-bound kernels
  simgrid::s4u::Host* clock = nullptr;
};

// Sets the network model configuration (pure alpha-beta) on the engine; call before building zones.
void configure_engine(simgrid::s4u::Engine& engine);
// The cost model's fabric: a port per GPU into a non-blocking switch, on PCIe a shared host bridge
// that every peer flow also crosses, and on ib-rail a NIC per GPU for flows between nodes.
Platform build_platform(int gpus, const CostModel& cost);
// Bandwidth of a GPU's HBM link: HBM bandwidth times the profile's memory-bound efficiency.
double kHbmLinkBps(const CostModel& cost);

}  // namespace tpsim::sim
