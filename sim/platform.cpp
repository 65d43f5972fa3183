// SimGrid zones, hosts and links for the supported topologies.
#include "sim/platform.hpp"

#include <string>

namespace tpsim::sim {

namespace s4u = simgrid::s4u;

void configure_engine(s4u::Engine& engine) {
  engine.set_config("network/model:CM02");
  engine.set_config("network/TCP-gamma:0");
  engine.set_config("network/crosstraffic:0");
}

Platform build_platform(Topology /*topology*/, int gpus, const CostModel& cost) {
  Platform platform;
  auto* zone = s4u::create_star_zone("nvswitch");
  std::vector<double> speeds;
  for (int k = 0; k <= kMaxConcurrentComm; ++k) speeds.push_back(kWorkRate * cost.compute_share_during_comm(k));
  platform.slowest_gpu_speed = speeds.back();
  for (int i = 0; i < gpus; ++i) {
    const std::string id = std::to_string(i);
    s4u::Host* host = zone->create_host("gpu" + id, speeds);
    s4u::Link* port = zone->create_split_duplex_link("nvlink" + id, cost.gpu().nvlink_Bps)->set_latency(0);
    zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr,
                    {s4u::LinkInRoute(port, s4u::LinkInRoute::Direction::UP)}, false);
    zone->add_route(nullptr, host->get_netpoint(), nullptr, nullptr,
                    {s4u::LinkInRoute(port, s4u::LinkInRoute::Direction::DOWN)}, false);
    platform.gpus.push_back(host);
  }
  platform.clock = zone->create_host("clock", kClockRate)->set_core_count(1 << 24);
  zone->seal();
  return platform;
}

}  // namespace tpsim::sim
