// Context parallelism simulated: each ring step's K/V transfer against the closed form of one block over the CP
// group's link, the forward ring's time against its steps' slower of block and transfer, the CP group placed inside a
// node or across nodes by the mesh order, and --no-symmetry's run of every CP member against the symmetric one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "model/scenario.hpp"
#include "sim/engine/data_group.hpp"
#include "sim/run/scenario_run.hpp"
#include "test_support.hpp"

using namespace tpsim;

namespace {

struct Span {
  double start = 0, end = 0;
  double length() const { return end - start; }
};

Span span_of(const sim::Timeline& t, model::OpId op) {
  for (const sim::OpSpan& s : t.spans) {
    if (s.op == op && s.rank == 0) return Span{s.start_s, s.end_s};
  }
  FAIL("no span of op " << op);
  return {};
}

// The forward ring of layer 0: its blocks and its transfers, in step order.
struct Ring {
  std::vector<model::OpId> blocks, transfers;
};

Ring forward_ring(const model::LayerGraph& g) {
  Ring ring;
  for (model::OpId id = 0; id < g.size(); ++id) {
    const model::Op& op = g.op(id);
    if (op.stage != model::OpStage::kForward || op.layer != 0) continue;
    if (op.kind == model::OpKind::kAttention) ring.blocks.push_back(id);
    if (op.kind == model::OpKind::kCollective && op.name.find(".cp.kv.step") != std::string::npos) {
      ring.transfers.push_back(id);
    }
  }
  return ring;
}

// Simulates one Llama-3.1-8B layer's training step at TP `tp` (sp) with its sequence split over `cp` GPUs (p2p),
// on `nodes` ib-rail nodes, and checks the forward ring against its closed form; returns the exposed transfer time.
double check_ring(int tp, int cp, int64_t seq, int nodes) {
  model::Workload w = test::train_workload(1, seq, 1);
  w.context_parallel.degree = cp;
  w.context_parallel.member_stride = tp;
  const model::LayerGraph g =
      model::build_layer_graph(model::load_model_preset("llama-3.1-8b"), w, tp, test::variant(model::TpMode::kSp));
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const sim::Fabric job = sim::resolve_fabric(sim::FabricRequest{"ib-rail", nodes}, gpu);
  const sim::CostModel cost(gpu, test::profile_preset("h100-sxm"), sim::group_fabric(job, tp));
  const sim::Timeline t = sim::simulate(g, cost);
  const Ring ring = forward_ring(g);
  REQUIRE(ring.blocks.size() == static_cast<size_t>(cp));
  REQUIRE(ring.transfers.size() == static_cast<size_t>(cp - 1));
  // K and V of the rank's seq / cp tokens (Llama-3.1-8B: 8 K/V heads of 128 over tp ranks), bf16.
  const double kv = 2.0 * static_cast<double>(seq / cp) * (8.0 / tp) * 128.0 * 2.0;
  const double transfer_s = sim::data_group_idle_seconds(g.op(ring.transfers[0]), cost);
  double expected = 0, exposed = 0;
  for (int step = 0; step < cp; ++step) {
    const Span block = span_of(t, ring.blocks[step]);
    if (step == cp - 1) {
      expected += block.length();
      break;
    }
    const Span transfer = span_of(t, ring.transfers[step]);
    INFO("step " << step);
    CHECK(g.op(ring.transfers[step]).tensor_bytes == Approx(kv));
    CHECK(transfer.length() == Approx(transfer_s).epsilon(1e-6));  // alone on its link: the closed form
    // The next block waits for this one and for the K/V this step receives.
    CHECK(span_of(t, ring.blocks[step + 1]).start == Approx(std::max(block.end, transfer.end)).epsilon(1e-9));
    expected += std::max(block.length(), transfer_s);
    exposed += std::max(0.0, transfer_s - block.length());
  }
  const double ring_s = span_of(t, ring.blocks.back()).end - span_of(t, ring.blocks.front()).start;
  CHECK(ring_s == Approx(expected).epsilon(1e-6));
  return exposed;
}

std::string job_text(const std::string& parallelism, int nodes) {
  return "name: job\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm, topology: ib-rail, nodes: " +
         std::to_string(nodes) +
         "}\nworkload: {phase: train, batch: 1, seq_len: 16384, layers: 2, recompute: full}\nparallelism: " +
         parallelism + "\nfsdp: {}\nvariants: [{name: sp, tp_mode: sp}]\n";
}

}  // namespace

TEST_CASE("a ring step across nodes sends one K/V block in its closed form, exposed where the block is shorter",
          "[sim][context_parallel]") {
  // 8192 tokens over cp 4 across 4 nodes: 1 MiB per step over the NIC outlasts a 2048-token block's attention.
  CHECK(check_ring(8, 4, 8192, 4) > 0);
}

TEST_CASE("a ring step inside a node hides under a long block's attention", "[sim][context_parallel]") {
  // tp 4 x cp 2 in one node: the K/V of 65,536 tokens over NVLink, beside 2 x 32,768^2 query-key pairs of attention.
  CHECK(check_ring(4, 2, 131072, 1) == 0);
}

TEST_CASE("the CP group sits inside a node or across nodes as the mesh order places it", "[sim][context_parallel]") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const sim::Fabric job = sim::resolve_fabric(sim::FabricRequest{"ib-rail", 4}, gpu);
  // CP next to TP: members tp GPUs apart. tp 4 x cp 2 fills one node; tp 8 x cp 2 puts each member in its own node.
  CHECK(sim::data_group_fabric(sim::group_fabric(job, 4), 4, 2).nodes == 1);
  CHECK(sim::data_group_fabric(sim::group_fabric(job, 8), 8, 2).nodes == 2);
  CHECK(sim::data_group_fabric(sim::group_fabric(job, 2), 2, 8).nodes == 2);
}

TEST_CASE(
    "a run without symmetry simulates every CP member and data-parallel replica and agrees with the symmetric one",
    "[sim][context_parallel][no_symmetry]") {
  // How far the whole job's run is from the symmetric one's: its time and its data group's time in flight.
  const auto disagreement = [](const std::string& parallelism, int gpus) {
    const model::Scenario s = model::parse_scenario(job_text(parallelism, 2), "job.yaml");
    const sim::VariantRun a = sim::run_scenario(s).variants.front();
    const sim::VariantRun b = sim::run_scenario(s, {}, nullptr, sim::Symmetry::kEveryMember).variants.front();
    CHECK(a.passes.front().timeline.ranks == 4);
    CHECK(b.passes.front().timeline.ranks == gpus);  // tp x cp x dp
    CHECK(b.metrics.data_comm_s == Approx(a.metrics.data_comm_s).epsilon(0.01));
    return std::abs(b.metrics.time_s / a.metrics.time_s - 1);
  };
  // The same 16 GPUs as 4 data-parallel replicas disagree by under 2% already (their FSDP collectives, which the
  // symmetric run charges in closed form, contend step by step with the TP group's): CP adds no more than 1% (its
  // K/V exchanges contend likewise, beside off-diagonal blocks short at the unmasked rate: 0.53% for the ring).
  const double replicas = disagreement("{tp: 4, dp: 4}", 16);
  CHECK(replicas < 0.02);
  CHECK(disagreement("{tp: 4, dp: 2, cp: 2}", 16) < replicas + 0.01);
  CHECK(disagreement("{tp: 4, dp: 2, cp: 2, cp_comm_type: all_gather}", 16) < replicas + 0.01);
}

TEST_CASE("a job of tp x cp x pp x dp GPUs must fill the nodes it is given", "[sim][context_parallel]") {
  // tp 8 x cp 2 x dp 2 = 32 GPUs: more than 2 nodes hold, and fewer than 8 nodes.
  CHECK_THROWS_WITH(sim::run_scenario(model::parse_scenario(job_text("{tp: 8, dp: 2, cp: 2}", 2), "job.yaml")),
                    Catch::Contains("job.yaml:") && Catch::Contains("tp x cp x dp = 8 x 2 x 2 = 32 GPUs"));
  CHECK_THROWS_WITH(sim::run_scenario(model::parse_scenario(job_text("{tp: 8, dp: 2, cp: 2}", 8), "job.yaml")),
                    Catch::Contains("fill 4 of the 8"));
}

TEST_CASE("the K/V exchanges' exposed time is reported in a cp dimension of its own, apart from the gradients' dp",
          "[sim][context_parallel]") {
  // tp 8 x cp 4 over 4 nodes: each ring step crosses the NIC and outlasts its block (the test above), and FSDP
  // reduces the gradients over dp x cp = 4.
  const model::Scenario s = model::parse_scenario(job_text("{tp: 8, cp: 4}", 4), "job.yaml");
  const sim::VariantRun v = sim::run_scenario(s).variants.front();
  const sim::ExposedByDimension e = sim::exposed_by_dimension(v);
  CHECK(v.metrics.context_comm_s > 0);
  CHECK(v.metrics.context_comm_s <= v.metrics.data_comm_s);
  CHECK(e.cp_s > 0);
  CHECK(e.cp_s == Approx(v.metrics.exposed_context_comm_s));
  // The data group's exposed time splits between the two, and the TP group's is what neither counts.
  CHECK(e.dp_s + e.cp_s == Approx(v.metrics.exposed_data_comm_s));
  CHECK(e.tp_s + e.dp_s + e.cp_s + e.ep_s == Approx(v.metrics.exposed_comm_s));
  // Without CP nothing is counted there.
  const sim::VariantRun plain =
      sim::run_scenario(model::parse_scenario(job_text("{tp: 8, dp: 4}", 4), "job.yaml")).variants.front();
  CHECK(plain.metrics.context_comm_s == 0);
  CHECK(sim::exposed_by_dimension(plain).cp_s == 0);
}
