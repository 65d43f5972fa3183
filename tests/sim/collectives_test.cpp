// Collective algorithms: closed forms on an idle node, the auto rule, NVLS availability.
#include <catch2/catch.hpp>

#include "model/program_builder.hpp"
#include "sim/comm_plan.hpp"
#include "sim/isolated_run.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::CollectiveAlgorithm;

using test::simulate_collective;

TEST_CASE("an NVLS all-reduce moves the tensor once each way: latency + S / (B eff)") {
  const sim::CostModel cost(test::gpu_preset("h200-sxm"), test::profile_preset("h200-sxm"));
  REQUIRE(cost.profile().nvls);
  const double bytes = 256.0 * 1024 * 1024;
  const sim::TransportParams& nvls = *cost.profile().nvls;
  const double expected = nvls.step_latency_s + bytes / (cost.gpu().nvlink_Bps * nvls.link_efficiency);
  CHECK(simulate_collective(cost, 8, model::CollectiveKind::kAllReduce, bytes, CollectiveAlgorithm::kNvls) ==
        Approx(expected).epsilon(1e-6));
}

TEST_CASE("auto never picks a slower all-reduce than a forced algorithm") {
  const sim::CostModel cost(test::gpu_preset("h200-sxm"), test::profile_preset("h200-sxm"));
  for (double kib : {4.0, 64.0, 1024.0, 8192.0, 65536.0, 1048576.0}) {
    const double bytes = kib * 1024;
    const double automatic =
        simulate_collective(cost, 8, model::CollectiveKind::kAllReduce, bytes, CollectiveAlgorithm::kAuto);
    for (CollectiveAlgorithm forced : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kDirect,
                                       CollectiveAlgorithm::kTwoShot, CollectiveAlgorithm::kNvls}) {
      INFO(kib << " KiB, forced " << model::to_string(forced));
      CHECK(automatic <= simulate_collective(cost, 8, model::CollectiveKind::kAllReduce, bytes, forced) * (1 + 1e-9));
    }
  }
}

TEST_CASE("NVLS applies to all-reduces on GPUs whose profile has it, else the ring runs") {
  const sim::CostModel h200(test::gpu_preset("h200-sxm"), test::profile_preset("h200-sxm"));
  model::Op op;
  op.kind = model::OpKind::kCollective;
  op.collective = model::CollectiveKind::kAllGather;
  op.group_size = 8;
  op.tensor_bytes = 1e9;
  op.algorithm = CollectiveAlgorithm::kNvls;
  CHECK(sim::plan_communication(op, 8, h200).algorithm == CollectiveAlgorithm::kRing);
  op.collective = model::CollectiveKind::kAllReduce;
  CHECK(sim::plan_communication(op, 8, h200).algorithm == CollectiveAlgorithm::kNvls);
  sim::CostProfile without = test::profile_preset("h200-sxm");
  without.nvls.reset();
  const sim::CostModel plain(test::gpu_preset("h200-sxm"), without);
  CHECK(sim::plan_communication(op, 8, plain).algorithm == CollectiveAlgorithm::kRing);
  op.algorithm = CollectiveAlgorithm::kAuto;
  CHECK(sim::plan_communication(op, 8, plain).algorithm == CollectiveAlgorithm::kRing);
}

TEST_CASE("every GPU preset loads and has a default profile") {
  for (const std::string& name : model::preset_names("gpus")) {
    const sim::GpuSpec gpu = test::gpu_preset(name);
    CHECK(gpu.peak_bf16_flops > 0);
    CHECK(gpu.sm_count > 0);
  }
  for (const std::string& name : model::preset_names("gpus")) CHECK(sim::default_profile(name).has_value());
  // H800: the H100 die with a third of the NVLink bandwidth.
  CHECK(test::gpu_preset("h800-sxm").nvlink_Bps == Approx(test::gpu_preset("h100-sxm").nvlink_Bps * 200.0 / 450.0));
}

TEST_CASE("a ring runs the low-latency protocol regime for small messages and Simple for large ones") {
  const sim::CostModel cost = test::h100_cost();
  REQUIRE(cost.profile().nccl_small);
  model::Op op;
  op.kind = model::OpKind::kCollective;
  op.collective = model::CollectiveKind::kAllGather;
  op.group_size = 8;
  op.tensor_bytes = 256 * 1024;
  CHECK(sim::plan_communication(op, 8, cost).low_latency_protocol);
  op.tensor_bytes = 512.0 * 1024 * 1024;
  CHECK_FALSE(sim::plan_communication(op, 8, cost).low_latency_protocol);
  // Whichever runs is the faster of the two on an idle node.
  for (double bytes : {64.0 * 1024, 4.0 * 1024 * 1024, 64.0 * 1024 * 1024}) {
    op.tensor_bytes = bytes;
    const double chosen = sim::idle_seconds(sim::plan_communication(op, 8, cost), cost);
    sim::CostProfile simple_only = cost.profile();
    simple_only.nccl_small.reset();
    const sim::CostModel simple(cost.gpu(), simple_only);
    CHECK(chosen <= sim::idle_seconds(sim::plan_communication(op, 8, simple), simple) * (1 + 1e-12));
  }
}

TEST_CASE("an all-to-all sends a 1/n block to every peer at once: latency + (n-1) S/n / (B eff)") {
  const sim::CostModel cost = test::h100_cost();
  const auto& nccl = cost.profile().nccl;
  const double bytes = 256.0 * (1 << 20), link = cost.gpu().nvlink_Bps * nccl.link_efficiency;
  for (int n : {2, 4, 8}) {
    const double expected = nccl.step_latency_s + (n - 1) * (bytes / n) / link;
    CHECK(simulate_collective(cost, n, model::CollectiveKind::kAllToAll, bytes, CollectiveAlgorithm::kAuto) ==
          Approx(expected).epsilon(1e-6));
  }
}

TEST_CASE("a send/recv ring shift moves the whole tensor to the next rank: latency + S / (B eff)") {
  const sim::CostModel cost = test::h100_cost();
  const auto& nccl = cost.profile().nccl;
  const double bytes = 64.0 * (1 << 20);
  const double expected = nccl.step_latency_s + bytes / (cost.gpu().nvlink_Bps * nccl.link_efficiency);
  for (int n : {2, 8}) {
    CHECK(simulate_collective(cost, n, model::CollectiveKind::kSendRecv, bytes, CollectiveAlgorithm::kRing) ==
          Approx(expected).epsilon(1e-6));
  }
}

TEST_CASE("a two-shot all-reduce is two steps of a 1/n block to every peer: 2 (latency + (n-1) S/n / (B eff))") {
  const sim::CostModel cost = test::h100_cost();
  REQUIRE(cost.profile().two_shot);
  const sim::TransportParams& two = *cost.profile().two_shot;
  const double bytes = 4.0 * (1 << 20), link = cost.gpu().nvlink_Bps * two.link_efficiency;
  for (int n : {4, 8}) {
    const double expected = 2 * (two.step_latency_s + (n - 1) * (bytes / n) / link);
    CHECK(simulate_collective(cost, n, model::CollectiveKind::kAllReduce, bytes, CollectiveAlgorithm::kTwoShot) ==
          Approx(expected).epsilon(1e-6));
  }
  // Without a two_shot section (a profile that never measured it) the forced two-shot runs as a ring.
  sim::CostProfile without = cost.profile();
  without.two_shot.reset();
  const sim::CostModel ring_only(cost.gpu(), without);
  CHECK(
      simulate_collective(ring_only, 8, model::CollectiveKind::kAllReduce, bytes, CollectiveAlgorithm::kTwoShot) ==
      Approx(simulate_collective(ring_only, 8, model::CollectiveKind::kAllReduce, bytes, CollectiveAlgorithm::kRing)));
}

TEST_CASE("auto runs NVLS only from the profile's nvls.min_ranks, as NCCL chooses; a forced NVLS runs below it") {
  sim::CostProfile profile = test::profile_preset("h200-sxm");
  REQUIRE(profile.nvls_min_ranks == 5);
  const sim::CostModel cost(test::gpu_preset("h200-sxm"), profile);
  model::Op op = test::collective_op(model::CollectiveKind::kAllReduce, 8.0 * (1 << 30), CollectiveAlgorithm::kAuto);
  CHECK(sim::plan_communication(op, 4, cost).algorithm == model::CollectiveAlgorithm::kRing);
  CHECK(sim::plan_communication(op, 5, cost).algorithm == model::CollectiveAlgorithm::kNvls);
  op.algorithm = model::CollectiveAlgorithm::kNvls;
  CHECK(sim::plan_communication(op, 4, cost).algorithm == model::CollectiveAlgorithm::kNvls);
}
