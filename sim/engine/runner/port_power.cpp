// The power each GPU's port transfers draw, and the power state it and the comm kernels' SMs set.
#include "sim/engine/runner/port_power.hpp"

#include <algorithm>
#include <utility>

#include "sim/cost/hbm_traffic.hpp"
#include "sim/cost/power_limit.hpp"

namespace tpsim::sim {
namespace {

void remove_one(std::vector<double>& rates, double rate) {
  const auto it = std::find(rates.begin(), rates.end(), rate);
  *it = rates.back();
  rates.pop_back();
}

double fastest(const std::vector<double>& rates) {
  return rates.empty() ? 0 : *std::max_element(rates.begin(), rates.end());
}

}  // namespace

PortPower::PortPower(const CostModel& cost, const PowerStates& states, std::vector<simgrid::s4u::Host*> hosts)
    : cost_(cost),
      states_(states),
      hosts_(std::move(hosts)),
      power_states_(hosts_.size(), 0),
      port_traffic_(hosts_.size()) {}

void PortPower::change_traffic(int src, int dst, double rate, double hbm_accesses_per_link_byte, bool starts,
                               const std::vector<int>& comm_sms) {
  const double extra = std::max(0.0, hbm_accesses_per_link_byte - kCopyHbmAccessesPerLinkByte);
  auto& in = port_traffic_[dst].in;
  if (starts) {
    port_traffic_[src].out.push_back(rate);
    // Kept in ascending order, so that the weighted mean below is summed in an order that does not depend on the
    // order the flows started in.
    const std::pair<double, double> flow{rate, extra};
    in.insert(std::upper_bound(in.begin(), in.end(), flow), flow);
  } else {
    remove_one(port_traffic_[src].out, rate);
    in.erase(std::find(in.begin(), in.end(), std::make_pair(rate, extra)));  // the rest stays in order
  }
  update(src, comm_sms[src]);
  update(dst, comm_sms[dst]);
}

// Flows that share a direction of the port share its rate, so a direction moves at its fastest flow's; the
// incoming flows' extra HBM accesses per byte are their mean weighted by their rates alone.
void PortPower::update(int rank, int taken_sms) {
  const PortTraffic& t = port_traffic_[rank];
  double in_Bps = 0, rates = 0, extra_rates = 0;
  for (const auto& [rate, extra] : t.in) {
    in_Bps = std::max(in_Bps, rate);
    rates += rate;
    extra_rates += rate * extra;
  }
  const double Bps = in_Bps + fastest(t.out);
  const double extra_Bps = rates > 0 ? in_Bps * extra_rates / rates : 0.0;
  const double draw_W =
      transfer_power_W(cost_.profile(), Bps) + extra_hbm_power_W(cost_.gpu(), cost_.profile(), extra_Bps);
  const int state = states_.state(taken_sms, draw_W);
  if (state != power_states_[rank]) {
    power_states_[rank] = state;
    hosts_[rank]->set_pstate(state);
  }
}

}  // namespace tpsim::sim
