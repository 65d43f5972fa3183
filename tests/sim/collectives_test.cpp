// Collective algorithms: closed forms on an idle node, the auto rule, NVLS availability.
#include <catch2/catch.hpp>

#include "base/input_error.hpp"
#include "input/profile/profile_reader.hpp"
#include "model/graph/program_builder.hpp"
#include "sim/engine/comm_plan.hpp"
#include "sim/engine/isolated_run.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::CollectiveAlgorithm;

using test::simulate_collective;

TEST_CASE("an NVLS all-reduce moves the tensor once each way: call latency + latency + S / (B eff)") {
  const sim::CostModel cost(test::gpu_preset("h200-sxm"), test::profile_preset("h200-sxm"));
  REQUIRE(cost.profile().nvls);
  const double bytes = 256.0 * 1024 * 1024;
  const sim::TransportParams& nvls = *cost.profile().nvls;
  REQUIRE(cost.profile().nccl_call_latency_s > 0);
  const double expected =
      cost.profile().nccl_call_latency_s + nvls.step_latency_s + bytes / (cost.gpu().nvlink_Bps * nvls.link_efficiency);
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

TEST_CASE("a forced NVLS runs all-reduces where the profile has it, and is refused elsewhere naming why") {
  const sim::CostModel h200(test::gpu_preset("h200-sxm"), test::profile_preset("h200-sxm"));
  model::Op op = test::collective_op(model::CollectiveKind::kAllGather, 1e9, CollectiveAlgorithm::kNvls);
  op.group_size = 8;
  CHECK_THROWS_WITH(sim::plan_communication(op, 8, h200), Catch::Contains("NVLS all-gathers"));
  op.collective = model::CollectiveKind::kAllReduce;
  CHECK(sim::plan_communication(op, 8, h200).algorithm == CollectiveAlgorithm::kNvls);
  sim::CostProfile without = test::profile_preset("h200-sxm");
  without.nvls.reset();
  const sim::CostModel plain(test::gpu_preset("h200-sxm"), without);
  CHECK_THROWS_WITH(sim::plan_communication(op, 8, plain), Catch::Contains("no nvls section"));
  op.algorithm = CollectiveAlgorithm::kAuto;
  CHECK(sim::plan_communication(op, 8, plain).algorithm == CollectiveAlgorithm::kMultimem);
  without.multimem.reset();
  const sim::CostModel ring_only(test::gpu_preset("h200-sxm"), without);
  CHECK(sim::plan_communication(op, 8, ring_only).algorithm == CollectiveAlgorithm::kRing);
}

TEST_CASE("multimem kernels move an all-reduce as NVLS does and a gather as the direct pattern, with no NCCL call") {
  const sim::CostModel cost = test::h100_cost();
  const sim::TransportParams& reduce = *cost.profile().multimem;
  const sim::TransportParams& gather = *cost.profile().multimem_gather;
  const int n = 8;
  const double bytes = 64.0 * 1024 * 1024;
  const double port = cost.port_Bps();
  model::Op op = test::collective_op(model::CollectiveKind::kAllReduce, bytes, CollectiveAlgorithm::kMultimem);
  op.group_size = n;
  // All-reduce: the tensor into and out of each port once (multimem.ld_reduce then multimem.st).
  CHECK(test::simulate_collective(cost, n, model::CollectiveKind::kAllReduce, bytes, CollectiveAlgorithm::kMultimem) ==
        Approx(reduce.step_latency_s + bytes / (port * reduce.link_efficiency)).epsilon(1e-6));
  // All-gather: each port receives the n - 1 other shards.
  CHECK(test::simulate_collective(cost, n, model::CollectiveKind::kAllGather, bytes, CollectiveAlgorithm::kMultimem) ==
        Approx(gather.step_latency_s + (n - 1) * (bytes / n) / (port * gather.link_efficiency)).epsilon(1e-6));
  CHECK(sim::plan_communication(op, n, cost).call_latency_s == 0);
  CHECK(sim::costed_by(sim::plan_communication(op, n, cost)) == "multimem");
  // The A100's NVSwitch has no multicast with reduction, and its profile no multimem section.
  const sim::CostModel a100(test::gpu_preset("a100-sxm"), test::profile_preset("a100-sxm"));
  CHECK_THROWS_WITH(sim::plan_communication(op, n, a100), Catch::Contains("no NVSwitch with multicast"));
  CHECK_FALSE(test::profile_preset("a100-sxm").multimem);
}

TEST_CASE("nccl runs NCCL's choice, and where the profile cannot cost it NCCL's next choice, saying why") {
  const sim::CostModel h200(test::gpu_preset("h200-sxm"), test::profile_preset("h200-sxm"));
  model::Op op = test::collective_op(model::CollectiveKind::kAllReduce, 64e6, CollectiveAlgorithm::kNccl);
  sim::CommPlan plan = sim::plan_communication(op, 8, h200);
  CHECK(plan.algorithm == CollectiveAlgorithm::kNvls);
  REQUIRE(plan.nccl_choice);
  CHECK(plan.nccl_choice->algorithm == CollectiveAlgorithm::kNvls);
  CHECK(plan.deviation.empty());
  sim::CostProfile without = test::profile_preset("h200-sxm");
  without.nvls.reset();
  plan = sim::plan_communication(op, 8, sim::CostModel(test::gpu_preset("h200-sxm"), without));
  CHECK(plan.algorithm == CollectiveAlgorithm::kRing);
  CHECK(plan.nccl_choice->algorithm == CollectiveAlgorithm::kNvls);
  CHECK_THAT(plan.deviation, Catch::Contains("NCCL runs nvls/Simple") && Catch::Contains("no nvls section"));
}

TEST_CASE("nccl never runs the custom one-shot or two-shot kernels that auto may pick") {
  const sim::CostModel cost = test::h100_cost();
  for (double bytes : {8e3, 256e3, 2e6, 8e6}) {
    INFO(bytes);
    const model::Op op = test::collective_op(model::CollectiveKind::kAllReduce, bytes, CollectiveAlgorithm::kNccl);
    const CollectiveAlgorithm a = sim::plan_communication(op, 8, cost).algorithm;
    CHECK((a == CollectiveAlgorithm::kRing || a == CollectiveAlgorithm::kNvls));
  }
  const model::Op small = test::collective_op(model::CollectiveKind::kAllReduce, 64e3, CollectiveAlgorithm::kAuto);
  CHECK(sim::plan_communication(small, 8, cost).algorithm == CollectiveAlgorithm::kDirect);
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

TEST_CASE("a profile with a bad value, an unknown key or a half-given section is refused with its location") {
  const std::string good = "gpu: h100-sxm\nbase: h100-sxm\nnccl:\n  step_latency_us: 6\n  link_efficiency: 0.75\n";
  CHECK(sim::parse_profile(good, "p.yaml").nccl.link_efficiency == 0.75);
  CHECK_THROWS_WITH(sim::parse_profile(good + "  ll:\n    step_latency_us: 1\n", "p.yaml"),
                    Catch::Contains("p.yaml:7:") && Catch::Contains("needs the key 'link_efficiency'"));
  CHECK_THROWS_WITH(sim::parse_profile("gpu: h100-sxm\nbase: a100-sxm\nnvls: {link_efficiency: 0.5}\n", "p.yaml"),
                    Catch::Contains("p.yaml:3:") && Catch::Contains("step_latency_us"));  // a100-sxm has no nvls
  CHECK_THROWS_WITH(sim::parse_profile(good + "  ll129: {step_latency_us: 1, link_efficiency: 0.3}\n", "p.yaml"),
                    Catch::Contains("p.yaml:6:") && Catch::Contains("ll129"));
  CHECK_THROWS_WITH(
      sim::parse_profile("gpu: h100-sxm\nbase: h100-sxm\nnccl:\n  step_latency_us: 6\n  link_efficiency: 1.5\n",
                         "p.yaml"),
      Catch::Contains("p.yaml:5:") && Catch::Contains("link_efficiency"));
  const sim::CostProfile both =
      sim::parse_profile(good +
                             "  ll: {step_latency_us: 1, link_efficiency: 0.3}\n  ll128: {step_latency_us: 3, "
                             "link_efficiency: 0.7}\n",
                         "p.yaml");
  REQUIRE(both.nccl_ll);
  REQUIRE(both.nccl_ll128);
  CHECK(both.nccl_ll->step_latency_s == Approx(1e-6));
  CHECK(sim::protocol_regime(both, model::Protocol::kLL128)->link_efficiency == 0.7);
  const sim::CostProfile base = *sim::default_profile("h100-sxm");
  // What the file does not give comes from its base, key by key: the unlabelled regime, the call latency.
  CHECK(sim::protocol_regime(both, model::Protocol::kLowLatency)->link_efficiency == base.nccl_small->link_efficiency);
  CHECK(sim::parse_profile(good, "p.yaml").nccl_call_latency_s == base.nccl_call_latency_s);
  CHECK(sim::parse_profile(good + "  call_latency_us: 12\n", "p.yaml").nccl_call_latency_s == Approx(12e-6));
  CHECK_THROWS_WITH(sim::parse_profile(good + "  call_latency_us: -1\n", "p.yaml"),
                    Catch::Contains("p.yaml:6:") && Catch::Contains("call_latency_us"));
}

TEST_CASE("a ring runs the low-latency protocol regime for small messages and Simple for large ones") {
  const sim::CostModel cost = test::h100_cost();
  REQUIRE(cost.profile().nccl_small);
  model::Op op;
  op.kind = model::OpKind::kCollective;
  op.collective = model::CollectiveKind::kAllGather;
  op.group_size = 8;
  op.tensor_bytes = 256 * 1024;
  CHECK(sim::plan_communication(op, 8, cost).protocol == model::Protocol::kLowLatency);
  op.tensor_bytes = 512.0 * 1024 * 1024;
  CHECK(sim::plan_communication(op, 8, cost).protocol == model::Protocol::kSimple);
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

namespace {

// A profile with three ring regimes whose crossovers are known: Simple 8 us / 0.8, LL128 4 us / 0.7,
// LL 1 us / 0.25 (ratios like NCCL's: LL moves half its bytes as flags, LL128 one 16th), each call
// 5 us before its first step.
constexpr double kCallLatency_s = 5e-6;
sim::CostModel three_protocol_cost() {
  sim::CostProfile p = test::profile_preset("h100-sxm");
  p.nccl_call_latency_s = kCallLatency_s;
  p.nccl = {8e-6, 0.8};
  p.nccl_small.reset();
  p.nccl_ll = sim::TransportParams{1e-6, 0.25};
  p.nccl_ll128 = sim::TransportParams{4e-6, 0.7};
  // NCCL's rings alone: auto would otherwise run an all-gather as a symmetric-memory multicast kernel.
  p.multimem.reset();
  p.multimem_gather.reset();
  return sim::CostModel(test::gpu_preset("h100-sxm"), p);
}

// A ring collective of `bytes` with its protocol forced (or auto).
model::Op ring_op(model::CollectiveKind kind, double bytes, model::Protocol protocol) {
  model::Op op = test::collective_op(kind, bytes, CollectiveAlgorithm::kRing);
  op.protocol = protocol;
  return op;
}

}  // namespace

TEST_CASE("each protocol regime's ring takes its closed form, and auto runs the fastest, a ring NCCL's choice") {
  const sim::CostModel cost = three_protocol_cost();
  const double link = cost.gpu().nvlink_Bps;
  const int n = 8;
  const auto closed_form = [&](const sim::TransportParams& t, double bytes, int steps) {
    return kCallLatency_s + steps * (t.step_latency_s + bytes / n / (link * t.link_efficiency));
  };
  const std::pair<model::Protocol, sim::TransportParams> regimes[] = {{model::Protocol::kSimple, {8e-6, 0.8}},
                                                                      {model::Protocol::kLL, {1e-6, 0.25}},
                                                                      {model::Protocol::kLL128, {4e-6, 0.7}}};
  for (double bytes : {32.0 * 1024, 1024.0 * 1024, 64.0 * 1024 * 1024}) {
    INFO(bytes);
    double fastest = 1e9;
    for (const auto& [protocol, t] : regimes) {
      const model::Op ag = ring_op(model::CollectiveKind::kAllGather, bytes, protocol);
      const sim::CommPlan plan = sim::plan_communication(ag, n, cost);
      CHECK(plan.protocol == protocol);
      CHECK(sim::idle_seconds(plan, cost) == Approx(closed_form(t, bytes, n - 1)).epsilon(1e-12));
      CHECK(simulate_collective(cost, n, model::CollectiveKind::kAllReduce, bytes, CollectiveAlgorithm::kRing,
                                protocol) == Approx(closed_form(t, bytes, 2 * (n - 1))).epsilon(1e-6));
      fastest = std::min(fastest, closed_form(t, bytes, n - 1));
    }
    model::Op fastest_op = ring_op(model::CollectiveKind::kAllGather, bytes, model::Protocol::kAuto);
    fastest_op.algorithm = CollectiveAlgorithm::kAuto;
    const sim::CommPlan chosen = sim::plan_communication(fastest_op, n, cost);
    CHECK(sim::idle_seconds(chosen, cost) == Approx(fastest).epsilon(1e-12));
  }
  // Crossovers: LL up to where LL128's bandwidth repays its 3 us more per step, LL128 up to Simple's.
  // LL vs LL128 per step: 1 + s/(0.25 B) = 4 + s/(0.7 B) -> s = 3 us x B / (1/0.25 - 1/0.7).
  const double ll_to_ll128 = 8 * 3e-6 * link / (1 / 0.25 - 1 / 0.7);
  const double ll128_to_simple = 8 * 4e-6 * link / (1 / 0.7 - 1 / 0.8);
  const auto auto_protocol = [&](double bytes) {
    model::Op op = ring_op(model::CollectiveKind::kAllGather, bytes, model::Protocol::kAuto);
    op.algorithm = CollectiveAlgorithm::kAuto;
    return sim::plan_communication(op, n, cost).protocol;
  };
  CHECK(auto_protocol(ll_to_ll128 * 0.9) == model::Protocol::kLL);
  CHECK(auto_protocol(ll_to_ll128 * 1.1) == model::Protocol::kLL128);
  CHECK(auto_protocol(ll128_to_simple * 0.9) == model::Protocol::kLL128);
  CHECK(auto_protocol(ll128_to_simple * 1.1) == model::Protocol::kSimple);
  // A forced ring (NCCL_ALGO=Ring) runs the protocol NCCL's tuner picks, costed by that regime.
  for (double bytes : {64e3, 8e6, 512e6}) {
    const sim::CommPlan ring =
        sim::plan_communication(ring_op(model::CollectiveKind::kAllGather, bytes, model::Protocol::kAuto), n, cost);
    REQUIRE(ring.nccl_run);
    CHECK(ring.protocol == ring.nccl_run->protocol);
    const auto ranked =
        sim::nccl_ranking(sim::nccl_system(cost.gpu(), cost.fabric(), n), model::CollectiveKind::kAllGather, bytes);
    CHECK(ring.protocol == ranked.front().protocol);
  }
}

TEST_CASE("a forced protocol the profile has no regime for is refused, and it rules out non-NCCL kernels") {
  const sim::CostModel h100 = test::h100_cost();  // Simple and an unnamed low-latency regime
  const model::Op ll = ring_op(model::CollectiveKind::kAllGather, 1 << 20, model::Protocol::kLL);
  CHECK_THROWS_WITH(sim::plan_communication(ll, 8, h100),
                    Catch::Contains("protocol ll") && Catch::Contains("no nccl.ll section"));
  // Raised inside the simulation process, it comes back as bad input, not as a failed simulation.
  CHECK_THROWS_AS(simulate_collective(h100, 8, model::CollectiveKind::kAllGather, 1 << 20, CollectiveAlgorithm::kRing,
                                      model::Protocol::kLL),
                  InputError);
  // A 1 MiB all-reduce on auto runs a custom kernel or NVLS; with NCCL_PROTO=LL128 NCCL can only run
  // its ring (NVLS is Simple only), and with Simple NVLS stays possible.
  const sim::CostModel cost = three_protocol_cost();
  model::Op ar = ring_op(model::CollectiveKind::kAllReduce, 1 << 20, model::Protocol::kAuto);
  ar.algorithm = CollectiveAlgorithm::kAuto;
  CHECK(sim::plan_communication(ar, 8, cost).algorithm != CollectiveAlgorithm::kRing);
  ar.protocol = model::Protocol::kLL128;
  const sim::CommPlan forced = sim::plan_communication(ar, 8, cost);
  CHECK(forced.algorithm == CollectiveAlgorithm::kRing);
  CHECK(forced.protocol == model::Protocol::kLL128);
  ar.protocol = model::Protocol::kSimple;
  ar.tensor_bytes = 256.0 * (1 << 20);
  CHECK(sim::plan_communication(ar, 8, cost).algorithm == CollectiveAlgorithm::kNvls);
}

TEST_CASE("an all-to-all sends a 1/n block to every peer at once: call latency + latency + (n-1) S/n / (B eff)") {
  const sim::CostModel cost = test::h100_cost();
  const auto& nccl = cost.profile().nccl;
  const double bytes = 256.0 * (1 << 20), link = cost.gpu().nvlink_Bps * nccl.link_efficiency;
  for (int n : {2, 4, 8}) {
    const double expected = cost.profile().nccl_call_latency_s + nccl.step_latency_s + (n - 1) * (bytes / n) / link;
    CHECK(simulate_collective(cost, n, model::CollectiveKind::kAllToAll, bytes, CollectiveAlgorithm::kAuto) ==
          Approx(expected).epsilon(1e-6));
  }
}

TEST_CASE("a send/recv ring shift moves the whole tensor to the next rank: call latency + latency + S / (B eff)") {
  const sim::CostModel cost = test::h100_cost();
  const auto& nccl = cost.profile().nccl;
  const double bytes = 64.0 * (1 << 20);
  const double expected =
      cost.profile().nccl_call_latency_s + nccl.step_latency_s + bytes / (cost.gpu().nvlink_Bps * nccl.link_efficiency);
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
  // Without a two_shot section (a profile that never measured it) a forced two-shot is refused, naming it.
  sim::CostProfile without = cost.profile();
  without.two_shot.reset();
  const sim::CostModel ring_only(cost.gpu(), without);
  const model::Op op = test::collective_op(model::CollectiveKind::kAllReduce, bytes, CollectiveAlgorithm::kTwoShot);
  CHECK_THROWS_WITH(sim::plan_communication(op, 8, ring_only), Catch::Contains("no two_shot section"));
}

TEST_CASE("auto runs NVLS only from the profile's nvls.min_ranks, as NCCL chooses, and a forced NVLS runs below it") {
  sim::CostProfile profile = test::profile_preset("h200-sxm");
  REQUIRE(profile.nvls_min_ranks == 5);
  profile.multimem.reset();  // NCCL's algorithms only: the multicast kernels would run at any rank count
  const sim::CostModel cost(test::gpu_preset("h200-sxm"), profile);
  model::Op op = test::collective_op(model::CollectiveKind::kAllReduce, 8.0 * (1 << 30), CollectiveAlgorithm::kAuto);
  CHECK(sim::plan_communication(op, 4, cost).algorithm == model::CollectiveAlgorithm::kRing);
  CHECK(sim::plan_communication(op, 5, cost).algorithm == model::CollectiveAlgorithm::kNvls);
  op.algorithm = model::CollectiveAlgorithm::kNvls;
  CHECK(sim::plan_communication(op, 4, cost).algorithm == model::CollectiveAlgorithm::kNvls);
}
