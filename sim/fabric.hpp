// The fabric that connects the GPUs of one TP group: an NVSwitch node (DGX / HGX, 8 GPUs), an NVL72
// rack domain (72 NVLink-5 GPUs behind NVSwitch trays), or PCIe (no NVLink: each GPU's x16 port
// into a host bridge that all peer traffic crosses). Each is a GPU port per GPU into a switch; PCIe
// adds the shared bridge. Multi-node fabrics (ib-rail) are not modelled yet.
#pragma once

#include <string>
#include <vector>

#include "sim/gpu_spec.hpp"

namespace tpsim::sim {

enum class FabricKind { kNvSwitch, kNvl72, kPcie };

struct Fabric {
  FabricKind kind = FabricKind::kNvSwitch;
  std::string name = "nvswitch";
  int max_gpus = 8;
  double port_Bps = 0;              // each GPU's port, one direction
  double bridge_Bps = 0;            // the shared host bridge every peer flow crosses (0: none)
  bool in_switch_reduction = true;  // NVLS possible (NVSwitch fabrics)
};

// The NVSwitch node of a GPU: its NVLink port, gpus_per_node GPUs.
Fabric nvswitch_fabric(const GpuSpec& gpu);

// hardware.topology: "nvswitch", "nvl72" or "pcie". Throws InputError (without a location: the
// caller adds it) for other names or a GPU the fabric cannot hold (nvl72 needs NVLink 5).
Fabric resolve_fabric(const std::string& topology, const GpuSpec& gpu);

const std::vector<std::string>& fabric_names();

}  // namespace tpsim::sim
