// --no-symmetry: every data-parallel replica simulated, its collectives run step by step between the replicas, checks
// the symmetric model (one replica, the collectives' closed form) on the collectives alone and on whole jobs.
#include <catch2/catch.hpp>
#include <string>

#include "model/program_builder.hpp"
#include "model/scenario.hpp"
#include "sim/data_group.hpp"
#include "sim/isolated_run.hpp"
#include "sim/scenario_run.hpp"
#include "test_support.hpp"

using namespace tpsim;

namespace {

// `collectives` reduce-scatters of `bytes` over a data group of `dp` replicas `stride` GPUs apart, each on its own
// stream, in a program of a TP group of `tp`.
model::LayerGraph data_program(int tp, int dp, int stride, double bytes, int collectives) {
  model::DataParallel replicas;
  replicas.degree = dp;
  replicas.member_stride = stride;
  model::LayerGraph graph(tp);
  model::ProgramBuilder b(graph, 2.0);
  for (int i = 0; i < collectives; ++i) {
    b.data_collective("rs" + std::to_string(i), model::CollectiveKind::kReduceScatter, bytes, replicas,
                      i == 0 ? model::Stream::kComm3 : model::Stream::kComm4, "", {});
  }
  return graph;
}

sim::EngineOptions every_member(int dp, int stride, const sim::Fabric& job) {
  sim::EngineOptions options;
  options.data_group = sim::DataGroupMembers{dp, stride, job};
  return options;
}

}  // namespace

TEST_CASE("a data-group collective run between every simulated replica takes the closed form of its ring",
          "[sim][no_symmetry]") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const sim::Fabric job = sim::resolve_fabric(sim::FabricRequest{"ib-rail", 16}, gpu);
  const sim::CostModel cost(gpu, test::profile_preset("h100-sxm"), sim::group_fabric(job, 8));
  const double bytes = 512e6;
  const model::LayerGraph one = data_program(8, 16, 8, bytes, 1);
  // The ring over 16 nodes, one member per node (rank r of replica k on GPU 8k + r), each on its own NIC.
  const sim::CommPlan steps = sim::plan_data_group_steps(one.op(0), cost);
  CHECK(steps.ranks == 16);
  CHECK(steps.steps == 15);
  const sim::CostModel group_cost(gpu, cost.profile(), sim::data_group_fabric(cost.fabric(), 8, 16));
  const double ring_s = sim::idle_seconds(steps, group_cost);
  const sim::Timeline every = sim::simulate(one, cost, every_member(16, 8, job));
  CHECK(every.ranks == 128);
  CHECK_FALSE((*every.plans)[0].outside);  // run as the ring's steps, not its closed form
  CHECK(every.makespan_s == Approx(ring_s).epsilon(1e-6));
  // The symmetric model: one replica, the same ring in closed form.
  CHECK(sim::simulate(one, cost).makespan_s == Approx(ring_s).epsilon(1e-6));
  // Two at once share every NIC for their bytes and pay their latencies side by side, in both models: the
  // latency, then twice one collective's bytes through the NIC.
  const model::LayerGraph two = data_program(8, 16, 8, bytes, 2);
  const double closed = sim::simulate(two, cost).makespan_s;
  const sim::CommPlan::OutsideGroup outside = *sim::plan_data_group(one.op(0), cost).outside;
  CHECK(closed == Approx(outside.latency_s + 2 * outside.link_bytes / job.nic_Bps).epsilon(1e-6));
  CHECK(sim::simulate(two, cost, every_member(16, 8, job)).makespan_s == Approx(closed).epsilon(1e-6));
}

TEST_CASE("replicas that share a node run their ring over NVLink between every simulated replica",
          "[sim][no_symmetry]") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const sim::Fabric job = sim::resolve_fabric(sim::FabricRequest{"ib-rail", 1}, gpu);
  const sim::CostModel cost(gpu, test::profile_preset("h100-sxm"), sim::group_fabric(job, 2));
  // tp = 2 leaves four replicas in the node: GPUs r, r + 2, r + 4, r + 6 hold rank r.
  const model::LayerGraph one = data_program(2, 4, 2, 64e6, 1);
  const sim::CommPlan steps = sim::plan_data_group_steps(one.op(0), cost);
  CHECK(steps.gpus_per_node == 0);  // one node: no flow crosses a NIC
  const sim::CostModel group_cost(gpu, cost.profile(), sim::data_group_fabric(cost.fabric(), 2, 4));
  const sim::Timeline every = sim::simulate(one, cost, every_member(4, 2, job));
  CHECK(every.ranks == 8);
  CHECK(every.makespan_s == Approx(sim::idle_seconds(steps, group_cost)).epsilon(1e-6));
}

namespace {

// Llama-3.1-8B cut to 4 layers, 4096 tokens per TP group of 8 on ib-rail nodes, sp and async variants.
std::string job_text(int nodes, const std::string& parallelism, const std::string& extra) {
  return "name: job\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm, topology: ib-rail, nodes: " +
         std::to_string(nodes) +
         "}\nworkload: {phase: train, batch: 1, seq_len: 4096, layers: 4, recompute: selective" + extra +
         "}\nparallelism: " + parallelism +
         "\nvariants:\n  - {name: sp, tp_mode: sp}\n  - {name: async, tp_mode: async, chunks: 8, transport: "
         "copy_engine}\n";
}

// Every variant's step time, data-group time in flight and tokens/s, with and without symmetry, within 1%.
void check_symmetry_holds(const std::string& text, int gpus) {
  const model::Scenario s = model::parse_scenario(text, "job.yaml");
  const sim::ScenarioRun one = sim::run_scenario(s);
  const sim::ScenarioRun every = sim::run_scenario(s, {}, nullptr, sim::Symmetry::kEveryMember);
  REQUIRE(every.variants.size() == one.variants.size());
  for (size_t i = 0; i < one.variants.size(); ++i) {
    const sim::VariantRun& a = one.variants[i];
    const sim::VariantRun& b = every.variants[i];
    INFO("variant " << a.variant.name);
    // Every replica's GPUs are in the simulated passes: the job's, over its pipeline stages.
    CHECK(b.passes.front().timeline.ranks * (b.pipeline ? s.parallelism.pp : 1) == gpus);
    CHECK(a.passes.front().timeline.ranks == s.parallelism.tp);
    CHECK(b.metrics.time_s == Approx(a.metrics.time_s).epsilon(0.01));
    CHECK(b.metrics.data_comm_s == Approx(a.metrics.data_comm_s).epsilon(0.01));
    CHECK(b.tokens_per_s == Approx(a.tokens_per_s).epsilon(0.01));
  }
}

}  // namespace

TEST_CASE("a symmetric and an every-replica simulation of a 32-GPU FSDP job agree within 1%", "[sim][no_symmetry]") {
  check_symmetry_holds(job_text(4, "{tp: 8, dp: 4}\nfsdp: {}", ""), 32);
}

TEST_CASE("a symmetric and an every-replica simulation of a 32-GPU HSDP job agree within 1%", "[sim][no_symmetry]") {
  // tp 2 x dp 16 on 4 nodes, sharded over 4 replicas (inside a node, over NVLink) and replicated 4 times across
  // the nodes: both of the data group's groups, one inside a node and one across.
  std::string text = job_text(4, "{tp: 2, dp: 16}\nfsdp: {shard_degree: 4}", "");
  text.replace(text.find("chunks: 8"), 9, "chunks: 2");
  check_symmetry_holds(text, 32);
}

TEST_CASE("a symmetric and an every-replica simulation of a 128-GPU pipelined job agree within 1%",
          "[sim][no_symmetry]") {
  // tp 8 x pp 2 x dp 8, each pipeline inside a node pair and the replicas of a stage 16 GPUs apart; DDP buckets.
  check_symmetry_holds(job_text(16, "{tp: 8, pp: 2, dp: 8, order: [tp, pp, dp]}\npipeline: {schedule: 1f1b}\nddp: {}",
                                ", microbatches: 4"),
                       128);
}
