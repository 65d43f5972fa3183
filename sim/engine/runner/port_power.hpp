// The power each GPU's port transfers draw, and the power state (platform.hpp) it and the comm kernels' SMs set.
#pragma once

#include <utility>
#include <vector>

#include <simgrid/s4u.hpp>

#include "sim/cost/cost_model.hpp"
#include "sim/engine/platform.hpp"

namespace tpsim::sim {

class PortPower {
 public:
  // `hosts`: each simulated rank's GPU host.
  PortPower(const CostModel& cost, const PowerStates& states, std::vector<simgrid::s4u::Host*> hosts);

  // Whether the platform models the power transfers draw (else a rank's state follows its comm kernels' SMs alone).
  bool draws_power() const { return states_.levels > 1; }

  // A flow of `rate` bytes/s from `src` to `dst` starts or ends moving data: the power its two ends draw for it
  // changes. Its kernel's HBM accesses per link byte beyond a copy's read and write (sim/cost/hbm_traffic.hpp) are
  // counted at the receiving end, where NCCL's FIFO is written and read: per rank of a ring, as much comes in as
  // goes out. The states of both ends are set anew for the SMs `comm_sms` (per rank) their comm kernels hold.
  void change_traffic(int src, int dst, double rate, double hbm_accesses_per_link_byte, bool starts,
                      const std::vector<int>& comm_sms);

  // Sets `rank`'s GPU host to the state of `taken_sms` SMs held by comm kernels beside its port's transfers.
  void update(int rank, int taken_sms);

 private:
  // The data rates of the transfers moving through a GPU's port, each direction (the power they draw).
  // A few flows at a time: small vectors, `out` in no order.
  struct PortTraffic {
    std::vector<std::pair<double, double>> in;  // rate, and HBM accesses per byte beyond a copy's; ascending
    std::vector<double> out;
  };

  const CostModel& cost_;
  const PowerStates& states_;
  std::vector<simgrid::s4u::Host*> hosts_;
  std::vector<int> power_states_;  // each GPU host's current state
  std::vector<PortTraffic> port_traffic_;
};

}  // namespace tpsim::sim
