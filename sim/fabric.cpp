// Fabric presets, each number with its source.
#include "sim/fabric.hpp"

#include "model/input_error.hpp"
#include "model/presets.hpp"
#include "model/units.hpp"

namespace tpsim::sim {
namespace {

// NVL72: 72 GPUs in one NVLink domain (NVIDIA GB200 NVL72 datasheet), NVLink 5 at 900 GB/s per GPU
// each way (interconnect_specs.csv, B200 row).
constexpr int kNvl72Gpus = 72;
constexpr double kNvlink5Bps = 900e9;
// PCIe servers: peer traffic crosses the CPU's root complex; tpsim gives that host bridge the
// bandwidth of two x16 ports (assumed: a bridge that feeds two GPU ports at full rate at once).
constexpr double kBridgePorts = 2.0;

}  // namespace

const std::vector<std::string>& fabric_names() {
  static const std::vector<std::string> names = {"nvswitch", "nvl72", "pcie"};
  return names;
}

Fabric nvswitch_fabric(const GpuSpec& gpu) {
  return Fabric{FabricKind::kNvSwitch, "nvswitch", gpu.gpus_per_node, gpu.nvlink_Bps, 0, true};
}

Fabric resolve_fabric(const std::string& topology, const GpuSpec& gpu) {
  if (topology == "nvswitch") return nvswitch_fabric(gpu);
  if (topology == "nvl72") {
    if (gpu.nvlink_Bps < kNvlink5Bps * 0.999) {
      throw InputError("topology nvl72 needs NVLink 5 GPUs (900 GB/s, e.g. b200); " + gpu.name + " has " +
                       model::format_number("%.0f", gpu.nvlink_Bps / 1e9) + " GB/s");
    }
    return Fabric{FabricKind::kNvl72, "nvl72", kNvl72Gpus, gpu.nvlink_Bps, 0, true};
  }
  if (topology == "pcie") {
    if (gpu.pcie_Bps <= 0) throw InputError("topology pcie needs the GPU's pcie_GBps (" + gpu.name + " has none)");
    return Fabric{FabricKind::kPcie, "pcie", gpu.gpus_per_node, gpu.pcie_Bps, kBridgePorts * gpu.pcie_Bps, false};
  }
  throw InputError("unknown topology '" + topology + "'; valid: " + model::join_names(fabric_names()) +
                   " (ib-rail is planned)");
}

}  // namespace tpsim::sim
