// Fabrics: PCIe's shared host bridge, NVL72's 72-GPU NVLink domain, and what each allows.
#include <catch2/catch.hpp>

#include "base/input_error.hpp"
#include "model/graph/program_builder.hpp"
#include "model/scenario.hpp"
#include "sim/engine/comm_plan.hpp"
#include "sim/engine/isolated_run.hpp"
#include "sim/run/scenario_run.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::CollectiveAlgorithm;
using model::CollectiveKind;

namespace {

sim::CostModel on(const std::string& topology, const std::string& gpu_name) {
  const sim::GpuSpec gpu = test::gpu_preset(gpu_name);
  return sim::CostModel(gpu, test::profile_preset("h100-sxm"), sim::resolve_fabric(topology, gpu));
}

}  // namespace

TEST_CASE("on PCIe every ring step shares the host bridge: c + (n-1) (latency + S/n / (eff x bridge / n))") {
  const sim::CostModel cost = on("pcie", "h100-sxm");
  const sim::Fabric& f = cost.fabric();
  CHECK(f.port_Bps == Approx(63e9));
  CHECK(f.bridge_Bps == Approx(2 * 63e9));
  const auto& nccl = cost.profile().nccl;
  const double bytes = 256.0 * (1 << 20);
  for (int n : {4, 8}) {
    // n flows at once, one per GPU: each gets the smaller of its port and its share of the bridge.
    const double per_flow = std::min(f.port_Bps, f.bridge_Bps / n) * nccl.link_efficiency;
    const double expected = cost.profile().nccl_call_latency_s + (n - 1) * (nccl.step_latency_s + bytes / n / per_flow);
    CHECK(test::simulate_collective(cost, n, CollectiveKind::kAllGather, bytes, CollectiveAlgorithm::kRing) ==
          Approx(expected).epsilon(1e-6));
  }
}

TEST_CASE("PCIe has no in-switch reduction: a forced NVLS is refused, auto and nccl all-reduces run without it") {
  const sim::CostModel pcie = on("pcie", "h200-sxm");
  model::Op op = test::collective_op(CollectiveKind::kAllReduce, 1 << 30, CollectiveAlgorithm::kNvls);
  CHECK_THROWS_WITH(sim::plan_communication(op, 8, pcie), Catch::Contains("no NVSwitch that reduces"));
  op.algorithm = CollectiveAlgorithm::kAuto;
  CHECK(sim::plan_communication(op, 8, pcie).algorithm != CollectiveAlgorithm::kNvls);
  op.algorithm = CollectiveAlgorithm::kNccl;
  const sim::CommPlan nccl = sim::plan_communication(op, 8, pcie);
  CHECK(nccl.algorithm == CollectiveAlgorithm::kRing);
  CHECK(nccl.deviation.empty());  // NCCL itself has no NVLS there
}

TEST_CASE(
    "an NVL72 domain holds 72 NVLink-5 GPUs, a 16-GPU ring runs at the NVLink-5 port rate, and racks join "
    "through a NIC per GPU") {
  const sim::CostModel cost = on("nvl72", "b200");
  CHECK(cost.fabric().max_gpus == 72);
  const auto& nccl = cost.profile().nccl;
  const double bytes = 512.0 * (1 << 20), n = 16;
  const double expected =
      cost.profile().nccl_call_latency_s + (n - 1) * (nccl.step_latency_s + bytes / n / (900e9 * nccl.link_efficiency));
  CHECK(test::simulate_collective(cost, 16, CollectiveKind::kAllGather, bytes, CollectiveAlgorithm::kRing) ==
        Approx(expected).epsilon(1e-6));
  CHECK_THROWS_WITH(sim::resolve_fabric("nvl72", test::gpu_preset("h100-sxm")),
                    Catch::Contains("nvl72 needs NVLink 5 GPUs"));
  // Several racks: 72 GPUs each, joined by a 400 Gb/s NIC per GPU unless another is given.
  const sim::GpuSpec b200 = test::gpu_preset("b200");
  const sim::Fabric racks = sim::resolve_fabric(sim::FabricRequest{"nvl72", 3}, b200);
  CHECK(racks.max_gpus == 3 * 72);
  CHECK(racks.gpus_per_node == 72);
  CHECK(racks.nic_Bps == sim::kDefaultRailNicBps);
  CHECK(racks.spans_nodes(144));
  CHECK_FALSE(racks.spans_nodes(72));
  CHECK(sim::resolve_fabric(sim::FabricRequest{"nvl72", 2, 100e9}, b200).nic_Bps == 100e9);
  CHECK_THROWS_WITH(sim::resolve_fabric("torus", test::gpu_preset("h100-sxm")),
                    "unknown topology 'torus'; valid: nvswitch, nvl72, pcie, ib-rail");
}

TEST_CASE("a scenario's topology is checked where it is written: unknown names and too many GPUs") {
  const std::string base = "name: t\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm, topology: ";
  const std::string rest =
      "}\nworkload: {phase: forward, batch: 1, seq_len: 512, layers: 1}\n"
      "parallelism: {tp: 8}\nvariants: [{name: tp, tp_mode: tp}]\n";
  const auto torus = model::parse_scenario(base + "torus" + rest, "t.yaml");
  CHECK_THROWS_WITH(sim::run_scenario(torus),
                    Catch::StartsWith("t.yaml:3:") && Catch::Contains("unknown topology 'torus'"));
  const auto pcie = model::parse_scenario(base + "pcie" + rest, "t.yaml");
  const sim::ScenarioRun run = sim::run_scenario(pcie);
  CHECK(run.fabric.name == "pcie");
  const auto nvswitch = model::parse_scenario(base + "nvswitch" + rest, "t.yaml");
  // The same layer over PCIe communicates far slower than over NVLink.
  CHECK(run.variants.front().metrics.comm_s > 5 * sim::run_scenario(nvswitch).variants.front().metrics.comm_s);
}

TEST_CASE("an A100's NVSwitch does not reduce in the switch: NVLS is refused there, and NCCL does not pick it") {
  const sim::CostModel a100(test::gpu_preset("a100-sxm"), test::profile_preset("h100-sxm"));
  CHECK_FALSE(a100.fabric().in_switch_reduction);
  model::Op op = test::collective_op(CollectiveKind::kAllReduce, 1 << 30, CollectiveAlgorithm::kNvls);
  CHECK_THROWS_WITH(sim::plan_communication(op, 8, a100), Catch::Contains("no NVSwitch that reduces"));
  op.algorithm = CollectiveAlgorithm::kNccl;
  CHECK(sim::plan_communication(op, 8, a100).algorithm == CollectiveAlgorithm::kRing);
  CHECK(test::h100_cost().fabric().in_switch_reduction);
}
