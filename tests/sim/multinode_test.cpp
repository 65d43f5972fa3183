// ib-rail: NVSwitch nodes joined by a NIC per GPU; rings striped over the rails, auto limited to what
// crosses nodes, and the network section a multi-node group needs.
#include <catch2/catch.hpp>

#include "base/input_error.hpp"
#include "model/scenario.hpp"
#include "sim/engine/comm_plan.hpp"
#include "sim/run/scenario_run.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::CollectiveAlgorithm;
using model::CollectiveKind;

namespace {

sim::CostModel rail(const std::string& gpu_name, int nodes, const sim::CostProfile& profile) {
  const sim::GpuSpec gpu = test::gpu_preset(gpu_name);
  return sim::CostModel(gpu, profile, sim::resolve_fabric(sim::FabricRequest{"ib-rail", nodes}, gpu));
}

sim::CostProfile with_network(double latency_s, double efficiency) {
  sim::CostProfile p = test::profile_preset("h100-sxm");
  p.network = sim::TransportParams{latency_s, efficiency};
  p.nccl_call_latency_s = 0;  // the steps alone (the engine's tests charge the call latency)
  return p;
}

}  // namespace

TEST_CASE("an ib-rail fabric has nodes of 8 GPUs with a 50 GB/s NIC each, and other fabrics are one node") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const sim::Fabric f = sim::resolve_fabric(sim::FabricRequest{"ib-rail", 4}, gpu);
  CHECK(f.max_gpus == 32);
  CHECK(f.gpus_per_node == 8);
  CHECK(f.nic_Bps == Approx(400e9 / 8));  // 400 Gb/s
  CHECK(f.node_of(7) == 0);
  CHECK(f.node_of(8) == 1);
  CHECK(f.spans_nodes(16));
  CHECK_FALSE(f.spans_nodes(8));
  CHECK(sim::resolve_fabric(sim::FabricRequest{"ib-rail", 2, 25e9}, gpu).nic_Bps == Approx(25e9));
  // One NVSwitch domain never spans nodes, whatever the rank count asked of it.
  CHECK_FALSE(sim::nvswitch_fabric(gpu).spans_nodes(16));
  CHECK_THROWS_WITH(sim::resolve_fabric(sim::FabricRequest{"nvswitch", 2}, gpu),
                    "nodes: 2 needs topology ib-rail (or nvl72 racks); nvswitch is one domain");
}

TEST_CASE("a ring across nodes runs at the NICs: 2(n-1) (net latency + S/n / (8 NICs x eff)) per all-reduce") {
  // A slow network: every step's inter-node hop is slower than its NVLink hop.
  const double latency = 8e-6, efficiency = 0.6;
  const sim::CostModel cost = rail("h100-sxm", 2, with_network(latency, efficiency));
  const double bytes = 1 << 30, n = 16;
  const double node_nics = 8 * 50e9;
  const double step = latency + bytes / n / (node_nics * efficiency);
  const auto& nccl = cost.profile().nccl;
  REQUIRE(step > nccl.step_latency_s + bytes / n / (450e9 * nccl.link_efficiency));
  const double expected = 2 * (n - 1) * step;
  CHECK(test::simulate_collective(cost, 16, CollectiveKind::kAllReduce, bytes, CollectiveAlgorithm::kRing) ==
        Approx(expected).epsilon(1e-6));
  const sim::CommPlan plan = sim::plan_communication(
      test::collective_op(CollectiveKind::kAllReduce, bytes, CollectiveAlgorithm::kRing), 16, cost);
  CHECK(sim::idle_seconds(plan, cost) == Approx(expected).epsilon(1e-9));
}

TEST_CASE("without striping over the rails the same hop would take 8x longer: the simulated ring uses every NIC") {
  const sim::CostModel cost = rail("h100-sxm", 2, with_network(0, 1.0));
  const double bytes = 1 << 30, n = 16;
  const double one_nic_step = bytes / n / 50e9;
  const double t = test::simulate_collective(cost, 16, CollectiveKind::kAllGather, bytes, CollectiveAlgorithm::kRing);
  CHECK(t < (n - 1) * one_nic_step / 4);
}

TEST_CASE("a fast network leaves the NVLink hop as a multi-node ring's slowest: the single-node closed form") {
  sim::CostProfile profile = with_network(0, 1.0);
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const sim::CostModel cost(gpu, profile, sim::resolve_fabric(sim::FabricRequest{"ib-rail", 2, 400e9}, gpu));
  const auto& nccl = profile.nccl;
  const double bytes = 1 << 30, n = 16;
  const double expected = (n - 1) * (nccl.step_latency_s + bytes / n / (450e9 * nccl.link_efficiency));
  CHECK(test::simulate_collective(cost, 16, CollectiveKind::kAllGather, bytes, CollectiveAlgorithm::kRing) ==
        Approx(expected).epsilon(1e-6));
}

TEST_CASE("an all-to-all across nodes is bound by each GPU's own NIC: (n - 8) blocks out of it per step") {
  const double latency = 5e-6, efficiency = 0.8;
  const sim::CostModel cost = rail("h100-sxm", 2, with_network(latency, efficiency));
  const double bytes = 256.0 * (1 << 20), n = 16;
  const double block = bytes / n;
  const double expected = latency + (n - 8) * block / (50e9 * efficiency);
  CHECK(test::simulate_collective(cost, 16, CollectiveKind::kAllToAll, bytes, CollectiveAlgorithm::kAuto) ==
        Approx(expected).epsilon(1e-6));
}

TEST_CASE("an oversubscribed fat tree slows only cross-rail traffic: all-to-alls, not rail-aligned rings") {
  const double latency = 5e-6, efficiency = 0.8;
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const auto cost_at = [&](double oversubscription) {
    const sim::Fabric f = sim::resolve_fabric(sim::FabricRequest{"ib-rail", 2, 0, oversubscription}, gpu);
    return sim::CostModel(gpu, with_network(latency, efficiency), f);
  };
  const double bytes = 256.0 * (1 << 20), block = bytes / 16;
  const auto all_to_all = [&](double r) {
    return test::simulate_collective(cost_at(r), 16, CollectiveKind::kAllToAll, bytes, CollectiveAlgorithm::kAuto);
  };
  // Each GPU sends 8 blocks to the other node: 1 on its own rail, 7 across rails. A leaf's uplink
  // carries the cross-rail blocks of its rail's 2 GPUs, 14, at 2 NICs' rate / r: at 2:1 it binds
  // (14 blocks at one NIC's rate against the NIC's own 8); at 1.5:1, 14 at 4/3 of a NIC, 10.5.
  const double per_block = block / (50e9 * efficiency);
  CHECK(all_to_all(1) == Approx(latency + 8 * per_block).epsilon(1e-6));
  CHECK(all_to_all(2) == Approx(latency + 14 * per_block).epsilon(1e-6));
  CHECK(all_to_all(1.5) == Approx(latency + 10.5 * per_block).epsilon(1e-6));
  // Rings go rail to rail (striped over every NIC): no uplink on their way.
  const double ring_1 =
      test::simulate_collective(cost_at(1), 16, CollectiveKind::kAllReduce, bytes, CollectiveAlgorithm::kRing);
  const double ring_4 =
      test::simulate_collective(cost_at(4), 16, CollectiveKind::kAllReduce, bytes, CollectiveAlgorithm::kRing);
  CHECK(ring_4 == Approx(ring_1).epsilon(1e-9));
  CHECK_THROWS_WITH(sim::resolve_fabric(sim::FabricRequest{"nvswitch", 1, 0, 2}, gpu),
                    Catch::Contains("oversubscription applies to topology ib-rail"));
  CHECK_THROWS_WITH(sim::resolve_fabric(sim::FabricRequest{"ib-rail", 2, 0, 0.5}, gpu),
                    Catch::Contains("must be 1 (non-blocking) or more"));
}

TEST_CASE(
    "across nodes auto and nccl all-reduces run as rings and a forced one-shot, two-shot or NVLS is refused, "
    "inside a node they stay") {
  const sim::CostModel cost = rail("h200-sxm", 2, test::profile_preset("h200-sxm"));
  for (double bytes : {64.0 * 1024, 1.0 * (1 << 30)}) {
    CAPTURE(bytes);
    for (CollectiveAlgorithm a : {CollectiveAlgorithm::kAuto, CollectiveAlgorithm::kNccl}) {
      const model::Op op = test::collective_op(CollectiveKind::kAllReduce, bytes, a);
      CHECK(sim::plan_communication(op, 16, cost).algorithm == CollectiveAlgorithm::kRing);
    }
    for (CollectiveAlgorithm a : {CollectiveAlgorithm::kDirect, CollectiveAlgorithm::kTwoShot}) {
      const model::Op op = test::collective_op(CollectiveKind::kAllReduce, bytes, a);
      CHECK_THROWS_WITH(sim::plan_communication(op, 16, cost),
                        Catch::Contains("needs one NVLink domain, and 16 ranks span nodes"));
    }
    const model::Op nvls = test::collective_op(CollectiveKind::kAllReduce, bytes, CollectiveAlgorithm::kNvls);
    CHECK_THROWS_WITH(sim::plan_communication(nvls, 16, cost), Catch::Contains("NVLS across nodes"));
  }
  // Inside one node the switch reduces: NCCL runs NVLS, and auto the symmetric-memory multicast kernel.
  const model::Op nccl = test::collective_op(CollectiveKind::kAllReduce, 1 << 30, CollectiveAlgorithm::kNccl);
  CHECK(sim::plan_communication(nccl, 8, cost).algorithm == CollectiveAlgorithm::kNvls);
  const model::Op fastest = test::collective_op(CollectiveKind::kAllReduce, 1 << 30, CollectiveAlgorithm::kAuto);
  CHECK(sim::plan_communication(fastest, 8, cost).algorithm == CollectiveAlgorithm::kMultimem);
}

TEST_CASE("a group across nodes needs the profile's network section, and says so") {
  sim::CostProfile profile = test::profile_preset("h100-sxm");
  profile.network.reset();
  const sim::CostModel cost = rail("h100-sxm", 2, profile);
  const model::Op op = test::collective_op(CollectiveKind::kAllReduce, 1 << 20, CollectiveAlgorithm::kAuto);
  CHECK_THROWS_AS(sim::plan_communication(op, 16, cost), InputError);
  CHECK_THROWS_WITH(sim::plan_communication(op, 16, cost), Catch::Contains("has no network section"));
  CHECK_NOTHROW(sim::plan_communication(op, 8, cost));
}

TEST_CASE("a scenario spans ib-rail nodes with hardware.nodes, and tp must fill them and fit them") {
  // 48 heads and 1152 tokens: tp = 12 and 24 divide the model and the pass, so only the fabric can refuse them.
  const std::string head =
      "name: t\nmodel: {hidden_size: 3072, intermediate_size: 12288, num_attention_heads: 48, num_key_value_heads: 48,"
      " num_hidden_layers: 2, vocab_size: 1000}\nhardware: {gpu: h100-sxm, topology: ib-rail, ";
  const std::string rest =
      "}\nworkload: {phase: forward, batch: 1, seq_len: 1152, layers: 1}\n"
      "parallelism: {tp: TP}\nvariants: [{name: sp, tp_mode: sp}]\n";
  const auto scenario = [&](const std::string& hardware, int tp) {
    std::string text = head + hardware + rest;
    text.replace(text.find("TP"), 2, std::to_string(tp));
    return model::parse_scenario(text, "t.yaml");
  };
  const sim::ScenarioRun two_nodes = sim::run_scenario(scenario("nodes: 2", 16));
  CHECK(two_nodes.fabric.nodes == 2);
  // The same 16-way layer over NVL-domain-free nodes communicates slower than 8-way inside one node.
  const sim::ScenarioRun one_node = sim::run_scenario(scenario("nodes: 1", 8));
  CHECK(two_nodes.variants.front().metrics.comm_s > one_node.variants.front().metrics.comm_s);
  CHECK_THROWS_WITH(sim::run_scenario(scenario("nodes: 2", 24)),
                    Catch::StartsWith("t.yaml:3:") &&
                        Catch::Contains("needs more GPUs than the 16 h100-sxm GPUs of 2 ib-rail nodes"));
  CHECK_THROWS_WITH(sim::run_scenario(scenario("nodes: 2", 12)), Catch::Contains("must fill them: a multiple of 8"));
  CHECK_THROWS_WITH(model::parse_scenario("name: t\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm, nic_GBps: 50}\n"
                                          "workload: {phase: forward, batch: 1, seq_len: 64}\nparallelism: {tp: 8}\n"
                                          "variants: [{name: sp, tp_mode: sp}]\n",
                                          "t.yaml"),
                    Catch::StartsWith("t.yaml:3:") && Catch::Contains("nic_GBps needs topology: ib-rail"));
  CHECK(sim::run_scenario(scenario("nodes: 2, oversubscription: 2", 16)).fabric.oversubscription == 2);
  CHECK_THROWS_WITH(scenario("nodes: 2, oversubscription: 0.5", 16),
                    Catch::StartsWith("t.yaml:3:") && Catch::Contains("must be 1 (non-blocking) or more"));
}
