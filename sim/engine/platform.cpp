// SimGrid zones, hosts and links for the supported topologies.
#include "sim/engine/platform.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "sim/cost/hbm_traffic.hpp"
#include "sim/cost/power_limit.hpp"
#include "sim/cost/sm_sharing.hpp"

namespace tpsim::sim {

namespace s4u = simgrid::s4u;

void configure_engine(s4u::Engine& engine) {
  engine.set_config("network/model:CM02");
  engine.set_config("network/TCP-gamma:0");
  engine.set_config("network/crosstraffic:0");
}

int PowerStates::state(int taken_sms, double transfer_W) const {
  // The largest total not above `taken_sms` (every reachable total is listed; a larger one is capped).
  const auto above = std::upper_bound(sm_totals.begin(), sm_totals.end(), taken_sms);
  const int comm = static_cast<int>(std::max<std::ptrdiff_t>(0, above - sm_totals.begin() - 1));
  if (levels == 1) return comm;
  const int level = static_cast<int>(std::lround(transfer_W / watts_per_level));
  return comm * levels + std::clamp(level, 0, levels - 1);
}

Platform build_platform(int gpus, const CostModel& cost, bool outside_groups,
                        const std::vector<std::pair<int, int>>& routes, const std::vector<int>& comm_sms) {
  Platform platform;
  const Fabric& fabric = cost.fabric();
  auto* zone = s4u::create_full_zone(fabric.name);
  // Both directions of the port at full rate bound what transfers can draw.
  const double max_transfer_W = transfer_power_W(cost.profile(), 2 * cost.port_Bps());
  if (max_transfer_W > 0) {
    platform.states.watts_per_level = max_transfer_W / kTransferPowerSteps;
    // Levels of the same size on top for the most HBM accesses a collective adds beyond a copy's, all incoming.
    const double max_extra_W = extra_hbm_power_W(
        cost.gpu(), cost.profile(), cost.port_Bps() * (kMaxHbmAccessesPerLinkByte - kCopyHbmAccessesPerLinkByte));
    platform.states.levels =
        kTransferPowerSteps + 1 + static_cast<int>(std::ceil(max_extra_W / platform.states.watts_per_level));
  }
  platform.states.sm_totals = sm_totals(comm_sms, kMaxConcurrentComm, cost.gpu().sm_count);
  std::vector<double> speeds;
  for (const int taken : platform.states.sm_totals) {
    for (int level = 0; level < platform.states.levels; ++level) {
      // Under the limiter's window the transfers count in its mean instead (runner/window_clock.hpp).
      const double clock =
          windowed_power(cost.profile())
              ? 1.0
              : clock_factor_beside_transfers(cost.gpu(), cost.profile(), level * platform.states.watts_per_level);
      speeds.push_back(kWorkRate * compute_share_left(cost.gpu().sm_count, taken) * clock);
    }
  }
  std::vector<s4u::Link*> ports, hbm;
  for (int i = 0; i < gpus; ++i) {
    const std::string id = std::to_string(i);
    platform.gpus.push_back(zone->create_host("gpu" + id, speeds));
    platform.memories.push_back(zone->create_host("hbm" + id, 1.0));
    ports.push_back(zone->create_split_duplex_link("port" + id, cost.port_Bps())->set_latency(0));
    // Shared by the GPU's memory-bound kernels and everything its NVLink port moves (both ends).
    hbm.push_back(zone->create_link("hbm_link" + id, kHbmLinkBps(cost))->set_latency(0));
  }
  // On PCIe every peer flow also crosses the host bridge, shared by all of them.
  s4u::Link* bridge =
      fabric.bridge_Bps > 0 ? zone->create_link("host_bridge", fabric.bridge_Bps)->set_latency(0) : nullptr;
  // Multi-node fabrics: a NIC per GPU into a fat tree, rail-optimised: same-rail traffic stays under
  // one leaf; cross-rail traffic crosses the spine, through each leaf's uplink when it is oversubscribed
  // (non-blocking: no uplink link, nothing there can bind).
  std::vector<s4u::Link*> nics, uplinks;
  if (fabric.spans_nodes(gpus)) {
    for (int i = 0; i < gpus; ++i) {
      nics.push_back(zone->create_split_duplex_link("nic" + std::to_string(i), fabric.nic_Bps)->set_latency(0));
    }
    if (fabric.oversubscription > 1) {
      const double uplink_Bps = fabric.nodes * fabric.nic_Bps / fabric.oversubscription;
      for (int rail = 0; rail < fabric.gpus_per_node; ++rail) {
        uplinks.push_back(
            zone->create_split_duplex_link("leaf_uplink" + std::to_string(rail), uplink_Bps)->set_latency(0));
      }
    }
  }
  for (int i = 0; i < gpus; ++i) {
    zone->add_route(platform.gpus[i]->get_netpoint(), platform.memories[i]->get_netpoint(), nullptr, nullptr,
                    {s4u::LinkInRoute(hbm[i])}, false);
  }
  for (const auto& [i, j] : routes) {
    if (i == j) continue;
    // Between nodes through the NICs, inside a node through the NVLink ports.
    const std::vector<s4u::Link*>& links = !nics.empty() && fabric.node_of(i) != fabric.node_of(j) ? nics : ports;
    std::vector<s4u::LinkInRoute> route = {
        s4u::LinkInRoute(hbm[i]), s4u::LinkInRoute(links[i], s4u::LinkInRoute::Direction::UP),
        s4u::LinkInRoute(links[j], s4u::LinkInRoute::Direction::DOWN), s4u::LinkInRoute(hbm[j])};
    if (bridge) route.insert(route.begin() + 2, s4u::LinkInRoute(bridge));
    const int rail_i = i % fabric.gpus_per_node, rail_j = j % fabric.gpus_per_node;
    if (!uplinks.empty() && fabric.node_of(i) != fabric.node_of(j) && rail_i != rail_j) {
      route.insert(route.begin() + 2, {s4u::LinkInRoute(uplinks[rail_i], s4u::LinkInRoute::Direction::UP),
                                       s4u::LinkInRoute(uplinks[rail_j], s4u::LinkInRoute::Direction::DOWN)});
    }
    zone->add_route(platform.gpus[i]->get_netpoint(), platform.gpus[j]->get_netpoint(), nullptr, nullptr, route, false);
  }
  if (outside_groups) {
    // Each GPU's NIC (those above where the group spans nodes, else its own) and its port lead out of the group.
    for (int i = static_cast<int>(nics.size()); i < gpus && fabric.nic_Bps > 0; ++i) {
      nics.push_back(zone->create_split_duplex_link("nic" + std::to_string(i), fabric.nic_Bps)->set_latency(0));
    }
    platform.outside_network = zone->create_host("outside_network", 1.0);
    platform.outside_nvlink = zone->create_host("outside_nvlink", 1.0);
    for (int i = 0; i < gpus; ++i) {
      for (const bool network : {true, false}) {
        if (network && nics.empty()) continue;
        s4u::Link* link = network ? nics[i] : ports[i];
        s4u::Host* outside = network ? platform.outside_network : platform.outside_nvlink;
        zone->add_route(platform.gpus[i]->get_netpoint(), outside->get_netpoint(), nullptr, nullptr,
                        {s4u::LinkInRoute(hbm[i]), s4u::LinkInRoute(link, s4u::LinkInRoute::Direction::UP)}, false);
        zone->add_route(outside->get_netpoint(), platform.gpus[i]->get_netpoint(), nullptr, nullptr,
                        {s4u::LinkInRoute(link, s4u::LinkInRoute::Direction::DOWN), s4u::LinkInRoute(hbm[i])}, false);
      }
    }
  }
  zone->seal();
  return platform;
}

double kHbmLinkBps(const CostModel& cost) {
  return cost.gpu().hbm_Bps * cost.profile().memory.hbm_efficiency;
}

}  // namespace tpsim::sim
