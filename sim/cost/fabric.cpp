// Fabric presets, each number with its source.
#include "sim/cost/fabric.hpp"

#include <algorithm>

#include "base/input_error.hpp"
#include "base/names.hpp"
#include "base/units.hpp"

namespace tpsim::sim {
namespace {

// NVL72: 72 GPUs in one NVLink domain (NVIDIA GB200 NVL72 datasheet), NVLink 5 at 900 GB/s per GPU
// each way (interconnect_specs.csv, B200 row). Several racks scale out through one 400 Gb/s ConnectX-7 NIC
// per GPU (DGX GB200: four per compute tray of four GPUs), ib-rail's default NIC.
constexpr int kNvl72Gpus = 72;
constexpr double kNvlink5Bps = 900e9;
// PCIe servers: peer traffic crosses the CPU's root complex; tpsim gives that host bridge the
// bandwidth of two x16 ports (assumed: a bridge that feeds two GPU ports at full rate at once).
constexpr double kBridgePorts = 2.0;

}  // namespace

const std::vector<std::string>& fabric_names() {
  static const std::vector<std::string> names = {"nvswitch", "nvl72", "pcie", "ib-rail"};
  return names;
}

Fabric measured_fabric(const GpuSpec& gpu, int nodes, double nic_Bps) {
  return nodes > 1 ? resolve_fabric(FabricRequest{"ib-rail", nodes, nic_Bps}, gpu) : nvswitch_fabric(gpu);
}

std::string group_placement_problem(const Fabric& fabric, int ranks, const std::string& gpu_name) {
  if (ranks > fabric.max_gpus) {
    return "needs more GPUs than the " + std::to_string(fabric.max_gpus) + " " + gpu_name + " GPUs of " +
           (fabric.nodes > 1 ? std::to_string(fabric.nodes) + " " + fabric.name + " nodes"
                             : "one " + fabric.name + " domain");
  }
  if (fabric.spans_nodes(ranks) && ranks % fabric.gpus_per_node != 0) {
    return "spans nodes, so it must fill them: a multiple of " + std::to_string(fabric.gpus_per_node) + " (GPUs per " +
           fabric.name + " node)";
  }
  // One TP group is simulated: nodes it does not reach would be ignored without a word.
  const int spanned = (ranks + fabric.gpus_per_node - 1) / fabric.gpus_per_node;
  if (fabric.nodes > spanned) {
    return "fills " + std::to_string(spanned) + " of the " + std::to_string(fabric.nodes) +
           " nodes; tpsim simulates one TP group, so give hardware.nodes: " + std::to_string(spanned);
  }
  return "";
}

Fabric group_fabric(const Fabric& fabric, int ranks) {
  if (fabric.nodes <= 1) return fabric;
  Fabric group = fabric;
  group.nodes = std::min(fabric.nodes, (ranks + fabric.gpus_per_node - 1) / fabric.gpus_per_node);
  group.max_gpus = group.nodes * fabric.gpus_per_node;
  return group;
}

std::string job_placement_problem(const Fabric& fabric, int tp, int pp, int dp, const std::string& gpu_name, int cp) {
  const int gpus = tp * cp * pp * dp;
  std::string names = "tp", sizes = std::to_string(tp);
  for (const auto& [name, size] : {std::pair{"cp", cp}, std::pair{"pp", pp}, std::pair{"dp", dp}}) {
    if (size == 1) continue;
    names += std::string(" x ") + name;
    sizes += " x " + std::to_string(size);
  }
  const std::string job = names + " = " + sizes + " = " + std::to_string(gpus) + " GPUs";
  if (gpus > fabric.max_gpus) {
    const int nodes = (gpus + fabric.gpus_per_node - 1) / fabric.gpus_per_node;
    return job + " needs more than the " + std::to_string(fabric.max_gpus) + " " + gpu_name + " GPUs of " +
           (fabric.nodes > 1 ? std::to_string(fabric.nodes) + " " + fabric.name + " nodes"
                             : "one " + fabric.name + " domain") +
           "; give topology: ib-rail with nodes: " + std::to_string(nodes);
  }
  if (fabric.nodes > 1 && fabric.gpus_per_node % tp != 0 && tp % fabric.gpus_per_node != 0) {
    return job + ": a TP group of " + std::to_string(tp) + " would straddle two " + fabric.name + " nodes of " +
           std::to_string(fabric.gpus_per_node) + " GPUs; valid: tp dividing " + std::to_string(fabric.gpus_per_node) +
           " or a multiple of it";
  }
  const int spanned = (gpus + fabric.gpus_per_node - 1) / fabric.gpus_per_node;
  if (fabric.nodes > spanned) {
    return job + " fill " + std::to_string(spanned) + " of the " + std::to_string(fabric.nodes) +
           " nodes; give hardware.nodes: " + std::to_string(spanned);
  }
  return "";
}

Fabric nvswitch_fabric(const GpuSpec& gpu) {
  Fabric f;
  f.max_gpus = gpu.gpus_per_node;
  f.gpus_per_node = gpu.gpus_per_node;
  f.port_Bps = gpu.nvlink_Bps;
  f.in_switch_reduction = gpu.switch_reduction;
  return f;
}

Fabric resolve_fabric(const FabricRequest& request, const GpuSpec& gpu) {
  const std::string& topology = request.topology;
  if (request.oversubscription != 1 && topology != "ib-rail") {
    throw InputError("oversubscription applies to topology ib-rail (the fat tree above its rail switches), not " +
                     topology);
  }
  if (!(request.oversubscription >= 1)) {
    throw InputError("oversubscription " + model::format_number("%g", request.oversubscription) +
                     ": must be 1 (non-blocking) or more (e.g. 2 for 2:1)");
  }
  if (!gpu.nvswitch && topology != "pcie" &&
      std::find(fabric_names().begin(), fabric_names().end(), topology) != fabric_names().end()) {
    throw InputError(
        "topology " + topology + " joins the GPUs of a node through NVSwitch; " + gpu.name +
        " has none (nvswitch: false in its preset: NVLink bridges join pairs of cards); use topology pcie");
  }
  if (topology == "ib-rail") {
    Fabric f = nvswitch_fabric(gpu);
    f.kind = FabricKind::kIbRail;
    f.name = "ib-rail";
    f.nodes = request.nodes;
    f.max_gpus = request.nodes * gpu.gpus_per_node;
    f.nic_Bps = request.nic_Bps > 0 ? request.nic_Bps : kDefaultRailNicBps;
    f.oversubscription = request.oversubscription;
    return f;
  }
  if (request.nodes != 1 && topology != "nvl72") {
    throw InputError("nodes: " + std::to_string(request.nodes) + " needs topology ib-rail (or nvl72 racks); " +
                     topology + " is one domain");
  }
  if (topology == "nvswitch") return nvswitch_fabric(gpu);
  if (topology == "nvl72") {
    if (gpu.nvlink_Bps < kNvlink5Bps * 0.999) {
      throw InputError("topology nvl72 needs NVLink 5 GPUs (900 GB/s, e.g. b200); " + gpu.name + " has " +
                       model::format_number("%.0f", gpu.nvlink_Bps / 1e9) + " GB/s");
    }
    Fabric f = nvswitch_fabric(gpu);
    f.kind = FabricKind::kNvl72;
    f.name = "nvl72";
    f.max_gpus = f.gpus_per_node = kNvl72Gpus;
    if (request.nodes > 1) {
      // Racks joined by one NIC per GPU under a non-blocking fat tree, as ib-rail joins its nodes.
      f.nodes = request.nodes;
      f.max_gpus = request.nodes * kNvl72Gpus;
      f.nic_Bps = request.nic_Bps > 0 ? request.nic_Bps : kDefaultRailNicBps;
    }
    return f;
  }
  if (topology == "pcie") {
    if (gpu.pcie_Bps <= 0) throw InputError("topology pcie needs the GPU's pcie_GBps (" + gpu.name + " has none)");
    Fabric f = nvswitch_fabric(gpu);
    f.kind = FabricKind::kPcie;
    f.name = "pcie";
    f.port_Bps = gpu.pcie_Bps;
    f.bridge_Bps = kBridgePorts * gpu.pcie_Bps;
    f.in_switch_reduction = false;
    return f;
  }
  throw InputError("unknown topology '" + topology + "'; valid: " + model::join_names(fabric_names()));
}

}  // namespace tpsim::sim
