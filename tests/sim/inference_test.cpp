// Inference: one-shot all-reduces for small messages, DTP hiding decode reductions, launch gaps
// and CUDA graphs, and the error of the generate integration shortcut.
#include <catch2/catch.hpp>

#include "model/graph/program_builder.hpp"
#include "sim/engine/comm_plan.hpp"
#include "sim/engine/isolated_run.hpp"
#include "sim/run/scenario_run.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::TpMode;

namespace {}  // namespace

TEST_CASE(
    "auto picks the one-shot all-reduce for small messages and the multicast kernels for large ones on NVSwitch") {
  const sim::CostModel cost = test::h100_cost();
  model::Op op;
  op.kind = model::OpKind::kCollective;
  op.collective = model::CollectiveKind::kAllReduce;
  op.group_size = 8;
  op.algorithm = model::CollectiveAlgorithm::kAuto;
  op.tensor_bytes = 16 * 1024;
  CHECK(sim::plan_communication(op, 8, cost).algorithm == model::CollectiveAlgorithm::kDirect);
  op.tensor_bytes = 64.0 * 1024 * 1024;
  // 64 MiB: TokenWeave measured multimem at 257 us against NCCL's 348; without the multimem kernels, NVLS.
  CHECK(sim::plan_communication(op, 8, cost).algorithm == model::CollectiveAlgorithm::kMultimem);
  sim::CostProfile without = test::profile_preset("h100-sxm");
  without.multimem.reset();
  without.multimem_gather.reset();
  const sim::CostModel nccl_only(test::gpu_preset("h100-sxm"), without);
  CHECK(sim::plan_communication(op, 8, nccl_only).algorithm == model::CollectiveAlgorithm::kNvls);
  op.collective = model::CollectiveKind::kAllGather;
  op.tensor_bytes = 16 * 1024;
  CHECK(sim::plan_communication(op, 8, cost).algorithm == model::CollectiveAlgorithm::kMultimem);
  CHECK(sim::plan_communication(op, 8, nccl_only).algorithm == model::CollectiveAlgorithm::kRing);
}

TEST_CASE("a one-shot all-reduce takes latency + (n-1) S / (B eff) on an idle node") {
  const sim::CostModel cost = test::h100_cost();
  const int n = 8;
  const double bytes = 256.0 * 1024;
  model::LayerGraph graph(n);
  model::ProgramBuilder b(graph, 2.0);
  b.set_collective_algorithm(model::CollectiveAlgorithm::kDirect);
  b.collective("ar", model::CollectiveKind::kAllReduce, bytes, "", {});
  const sim::TransportParams& t = *cost.profile().one_shot;
  const double expected = t.step_latency_s + (n - 1) * bytes / (cost.gpu().nvlink_Bps * t.link_efficiency);
  CHECK(sim::simulate(graph, cost).makespan_s == Approx(expected).epsilon(1e-6));
}

TEST_CASE("dtp hides most of the decode all-reduce time and keeps below the no-comm ceiling") {
  const sim::CostModel cost = test::h100_cost();
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-70b");
  const auto w = test::decode_workload(8, 2048, 4);
  model::Variant dtp1 = test::variant(TpMode::kDtp);
  dtp1.delta = 1;
  const auto run = [&](const model::Variant& v) {
    const model::LayerGraph graph = model::build_layer_graph(arch, w, 8, v);
    return sim::compute_metrics(graph, sim::simulate(graph, cost));
  };
  const sim::Metrics tp = run(test::variant(TpMode::kTp));
  const sim::Metrics dtp = run(dtp1);
  const sim::Metrics ceiling = run(test::variant(TpMode::kNoComm));
  CHECK(tp.exposed_comm_s == Approx(tp.comm_s));  // blocking: nothing hidden
  CHECK(dtp.exposed_comm_s < 0.2 * tp.exposed_comm_s);
  CHECK(dtp.time_s < tp.time_s);
  CHECK(ceiling.time_s <= dtp.time_s);
}

TEST_CASE("without CUDA graphs a small decode step is bound by host launches") {
  const sim::CostModel cost = test::h100_cost();
  const double launch = cost.profile().host_launch_s;
  REQUIRE(launch > 0);
  const model::ArchSpec arch = model::load_model_preset("qwen3-0.6b");
  const model::LayerGraph graph =
      model::build_layer_graph(arch, test::decode_workload(1, 128, 4), 8, test::variant(TpMode::kTp));
  const double with_graphs = sim::simulate(graph, cost).makespan_s;
  const double eager = sim::simulate(graph, cost, sim::launch_costs(launch)).makespan_s;
  // The last op cannot start before the host has launched every op.
  CHECK(eager >= static_cast<double>(graph.size()) * launch);
  CHECK(with_graphs < eager);
}

TEST_CASE("the generate shortcut sums decode steps within 0.1 percent of simulating every step") {
  model::Scenario s = model::parse_scenario(R"(model: qwen3-0.6b
hardware: {gpu: h100-sxm}
workload: {phase: generate, batch: 4, context_len: 512, gen_len: 40, layers: 2, cuda_graphs: true}
parallelism: {tp: 8}
variants: [{name: dtp, tp_mode: dtp, delta: 1}]
)",
                                            "generate.yaml");
  const sim::CostModel cost(test::gpu_preset("h100-sxm"), test::profile_preset("h100-sxm"));
  const sim::Metrics exact = sim::decode_total(s, s.variants[0], cost, {}, true);
  const sim::Metrics shortcut = sim::decode_total(s, s.variants[0], cost, {}, false);
  INFO("exact " << exact.time_s << " s, shortcut " << shortcut.time_s << " s");
  CHECK(shortcut.time_s == Approx(exact.time_s).epsilon(1e-3));
  CHECK(shortcut.comm_s == Approx(exact.comm_s).epsilon(1e-3));
}

TEST_CASE("a generate total equals TTFT + (gen_len - 1) TPOT, and tokens per second follow") {
  const model::Scenario s = model::parse_scenario(R"(model: qwen3-0.6b
hardware: {gpu: h100-sxm}
workload: {phase: generate, batch: 2, context_len: 256, gen_len: 16, layers: 2}
parallelism: {tp: 8}
variants: [{tp_mode: tp}, {tp_mode: nocomm}]
)",
                                                  "g.yaml");
  const sim::ScenarioRun run = sim::run_scenario(s);
  for (const sim::VariantRun& v : run.variants) {
    REQUIRE(v.ttft_s);
    REQUIRE(v.tpot_s);
    // The prefill yields the first token, then gen_len - 1 decode steps.
    CHECK(v.metrics.time_s == Approx(*v.ttft_s + (16 - 1) * *v.tpot_s));
    CHECK(v.tokens_per_s == Approx(2.0 * 16 / v.metrics.time_s));
    CHECK(v.passes_simulated == 4);  // the prefill and three decode steps
  }
}

TEST_CASE("dtp is never slower than tp nor faster than nocomm, and a larger delta never slows a step") {
  const sim::CostModel cost = test::h100_cost();
  struct Case {
    const char* model;
    int64_t batch, context;
  };
  for (const Case& c : {Case{"llama-3.1-8b", 1, 1024}, Case{"llama-3.1-70b", 32, 4096}, Case{"qwen3-0.6b", 8, 512}}) {
    const model::ArchSpec arch = model::load_model_preset(c.model);
    const auto w = test::decode_workload(c.batch, c.context, 4);
    const auto time_of = [&](const model::Variant& v) {
      return sim::simulate(model::build_layer_graph(arch, w, 8, v), cost).makespan_s;
    };
    const double tp = time_of(test::variant(TpMode::kTp));
    const double ceiling = time_of(test::variant(TpMode::kNoComm));
    double previous = tp;
    for (int delta = 0; delta <= 4; ++delta) {
      model::Variant v = test::variant(TpMode::kDtp);
      v.delta = delta;
      const double t = time_of(v);
      INFO(c.model << " batch " << c.batch << " delta " << delta);
      CHECK(t <= tp * (1 + 1e-12));
      CHECK(t >= ceiling);
      CHECK(t <= previous * (1 + 1e-12));
      previous = t;
    }
  }
}

TEST_CASE("a serving loop's host time per step adds to TPOT unless an overlap scheduler hides it behind the step") {
  const auto run = [](const std::string& implementation) {
    return sim::run_scenario(model::parse_scenario(R"(model: qwen3-0.6b
hardware: {gpu: h100-sxm}
workload: {phase: generate, batch: 2, context_len: 256, gen_len: 16, layers: 2, cuda_graphs: true}
parallelism: {tp: 8}
implementation: )" + implementation + R"(
variants: [{tp_mode: tp}]
)",
                                                   "g.yaml"));
  };
  const sim::ScenarioRun without = run("{step_host_us: 0}");
  const sim::ScenarioRun with = run("{step_host_us: 1000}");
  const sim::ScenarioRun hidden = run("{step_host_us: 1, overlap_scheduler: true}");
  const sim::VariantRun &a = without.variants[0], &b = with.variants[0], &c = hidden.variants[0];
  REQUIRE(*a.tpot_s > 1e-6);  // a step longer than the hidden host time
  CHECK(*b.tpot_s == Approx(*a.tpot_s + 1e-3));
  CHECK(*c.tpot_s == Approx(*a.tpot_s));
  // The total still reads as the prefill and 15 steps, and tokens per second follow it.
  CHECK(b.metrics.time_s == Approx(*b.ttft_s + 15 * *b.tpot_s));
  CHECK(b.tokens_per_s == Approx(2.0 * 16 / b.metrics.time_s));
}
