// What a run reports beside its times: the critical path through the op instances, the breakdown by module
// and kind, and MFU; each checked against the op times it is made of.
#include <catch2/catch.hpp>

#include "model/scenario.hpp"
#include "sim/engine/isolated_run.hpp"
#include "sim/report/breakdown.hpp"
#include "sim/report/critical_path.hpp"
#include "sim/run/scenario_run.hpp"
#include "test_support.hpp"

using namespace tpsim;

namespace {

// An op list: a GEMM, then an all-reduce, then a GEMM that needs it; and a memory-bound kernel beside them.
sim::ScenarioRun op_list_run() {
  const std::string text =
      "name: chain\nhardware: {gpu: h100-sxm}\nparallelism: {tp: 8}\n"
      "workload:\n  phase: ops\n  cuda_graphs: true\n  ops:\n"
      "    - {name: first, kind: gemm, m: 8192, n: 8192, k: 8192}\n"
      "    - {name: reduce, kind: collective, collective: allreduce, bytes: 256MiB, after: [first]}\n"
      "    - {name: second, kind: gemm, m: 8192, n: 8192, k: 8192, after: [reduce]}\n";
  return sim::run_scenario(model::parse_scenario(text, "chain.yaml"));
}

double duration(const sim::PathLink& link) {
  return link.end_s - link.start_s;
}

}  // namespace

TEST_CASE("the critical path runs from time zero to the last end, its links adding up to the pass time") {
  const sim::ScenarioRun run = op_list_run();
  const sim::PassTrace& pass = run.variants.front().passes.front();
  const std::vector<sim::PathLink> path = sim::critical_path(pass);
  REQUIRE(!path.empty());
  double total = 0, shares = 0;
  for (size_t i = 0; i < path.size(); ++i) {
    total += duration(path[i]);
    shares += path[i].share;
    if (i > 0) CHECK(path[i].start_s == Approx(path[i - 1].end_s).margin(1e-12));  // contiguous
  }
  CHECK(path.front().start_s == 0);
  CHECK(path.back().end_s == Approx(pass.timeline.makespan_s));
  CHECK(total == Approx(pass.timeline.makespan_s));
  CHECK(shares == Approx(1.0));
  // The blocking chain: both GEMMs and the all-reduce between them are on it, in that order.
  std::vector<std::string> ops;
  for (const sim::PathLink& link : path) {
    if (!link.op.empty()) ops.push_back(link.op);
  }
  CHECK(ops == std::vector<std::string>{"first", "reduce", "second"});
}

TEST_CASE("a collective longer than the GEMM beside it is the critical path, the GEMM is not") {
  const std::string text =
      "name: beside\nhardware: {gpu: h100-sxm}\nparallelism: {tp: 8}\n"
      "workload:\n  phase: ops\n  cuda_graphs: true\n  ops:\n"
      "    - {name: small, kind: gemm, m: 1024, n: 1024, k: 1024}\n"
      "    - {name: big, kind: collective, collective: allgather, bytes: 1GiB}\n";
  const sim::ScenarioRun run = sim::run_scenario(model::parse_scenario(text, "beside.yaml"));
  const std::vector<sim::PathLink> path = sim::critical_path(run.variants.front().passes.front());
  bool gemm = false, collective = false;
  for (const sim::PathLink& link : path) {
    gemm = gemm || link.op == "small";
    collective = collective || link.op == "big";
  }
  CHECK(collective);
  CHECK_FALSE(gemm);
  CHECK(sim::critical_path_by_kind(path).front().first == "collective");
}

TEST_CASE("the breakdown's kinds are the summed op times per GPU, and its total the sum of its modules") {
  const sim::ScenarioRun run = op_list_run();
  const sim::PassTrace& pass = run.variants.front().passes.front();
  double gemm = 0, comm = 0;
  for (const sim::OpSpan& span : pass.timeline.spans) {
    const model::OpKind kind = pass.graph.op(span.op).kind;
    (kind == model::OpKind::kGemm ? gemm : comm) += (span.end_s - span.start_s) / pass.timeline.ranks;
  }
  const std::vector<sim::BreakdownRow> rows = sim::breakdown(pass);
  REQUIRE(rows.size() == 2);  // an op list's ops belong to no layer: "other", then the total
  CHECK(rows[0].module == "other");
  CHECK(rows.back().module == "total");
  CHECK(rows.back().gemm_s == Approx(gemm));
  CHECK(rows.back().communication_s == Approx(comm));
  // The all-reduce runs while the compute stream waits for it: all of it is exposed.
  CHECK(rows.back().exposed_comm_s == Approx(run.variants.front().metrics.exposed_comm_s));
}

TEST_CASE("MFU is the GEMM and attention FLOPs of one GPU over its time at the bf16 peak") {
  const model::Scenario s = model::parse_scenario(
      "model: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nworkload: {phase: prefill, batch: 1, seq_len: 4096, layers: 2}\n"
      "parallelism: {tp: 8}\nvariants: [{name: tp, tp_mode: tp}, {name: ideal, tp_mode: nocomm}]\n",
      "t.yaml");
  const sim::ScenarioRun run = sim::run_scenario(s);
  for (const sim::VariantRun& v : run.variants) {
    const double flops = v.passes.front().graph.matmul_flops();
    CHECK(v.metrics.model_flops == Approx(flops));
    CHECK(v.mfu == Approx(flops / (v.metrics.time_s * 989.4e12)));
  }
  CHECK(run.variants[1].mfu > run.variants[0].mfu);  // the same FLOPs in less time
}

TEST_CASE("a training step's stages split its compute stream's time: forward, backward and optimizer sum to it") {
  const sim::CostModel cost = test::h100_cost();
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const model::Workload w = test::train_workload(1, 2048, 2, model::Recompute::kFull);
  sim::PassTrace pass{"train", model::build_layer_graph(arch, w, 8, test::variant(model::TpMode::kSp)), {}};
  pass.timeline = sim::simulate(pass.graph, cost);
  const auto stages = sim::stage_times(pass);
  REQUIRE(stages.size() == 4);
  CHECK(stages[0].first == "forward");
  CHECK(stages[1].first == "backward");
  CHECK(stages[2].first == "recompute");
  CHECK(stages[3].first == "optimizer");
  double total = 0, compute_end = 0;
  for (const auto& [stage, seconds] : stages) total += seconds;
  for (const sim::OpSpan& span : pass.timeline.spans) {
    if (span.rank == 0 && pass.graph.op(span.op).stream == model::Stream::kCompute) {
      compute_end = std::max(compute_end, span.end_s);
    }
  }
  CHECK(total == Approx(compute_end).epsilon(1e-12));
  for (const auto& [stage, seconds] : stages) CHECK(seconds > 0);
}

TEST_CASE("a step with one micro-batch and no optimizer is that micro-batch's forward, then its backward") {
  // One clock for the step and its forward alone (the limiter's window would give each its own).
  const sim::CostModel cost = test::h100_fixed_clock_cost();
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const model::Workload w = test::train_workload(1, 2048, 2, model::Recompute::kNone, 1, false);
  sim::PassTrace pass{"train", model::build_layer_graph(arch, w, 8, test::variant(model::TpMode::kSp)), {}};
  pass.timeline = sim::simulate(pass.graph, cost);
  const auto stages = sim::stage_times(pass);
  REQUIRE(stages.size() == 2);
  CHECK(stages[0].first == "forward");
  CHECK(stages[1].first == "backward");
  CHECK(stages[0].second + stages[1].second == Approx(pass.timeline.makespan_s).epsilon(1e-12));
  // The forward ops come first: simulated alone, they end where the step's forward stage ends.
  model::LayerGraph forward(pass.graph.tp());
  for (const model::Op& op : pass.graph.ops()) {
    if (op.stage != model::OpStage::kForward) break;
    forward.add(op);
  }
  size_t forward_ops = 0;
  for (const model::Op& op : pass.graph.ops()) forward_ops += op.stage == model::OpStage::kForward;
  REQUIRE(forward.size() == forward_ops);
  const sim::Timeline alone = sim::simulate(forward, cost);
  double compute_end = 0;
  for (const sim::OpSpan& span : alone.spans) {
    if (span.rank == 0 && forward.op(span.op).stream == model::Stream::kCompute) {
      compute_end = std::max(compute_end, span.end_s);
    }
  }
  CHECK(stages[0].second == Approx(compute_end).epsilon(1e-12));
}
