// Megatron's combined 1F1B schedule (variant overlap_moe_expert_parallel_comm): a micro-batch's expert all-to-alls
// run beside another's compute, hiding all but the first forward's and the last backward's, and what cannot be
// modelled is refused at its key.
#include <catch2/catch.hpp>
#include <string>

#include "base/input_error.hpp"
#include "model/scenario.hpp"
#include "sim/run/scenario_run.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

// Qwen3-30B-A3B's first 4 layers on one H200 node, tp 1, the experts over 8 GPUs, 4 micro-batches of one 4096-token
// sequence, no recomputation; the second variant under the combined schedule.
std::string job(const std::string& workload_extra = "", const std::string& parallel_extra = "",
                const std::string& flag = "overlap_moe_expert_parallel_comm: true") {
  return "name: c\nmodel: qwen3-30b-a3b\nhardware: {gpu: h200-sxm, topology: nvswitch, nodes: 1}\n"
         "workload: {phase: train, batch: 1, seq_len: 4096, layers: 4, microbatches: 4, recompute: none" +
         workload_extra + "}\nparallelism: {tp: 1, dp: 8, ep: 8" + parallel_extra +
         "}\nvariants:\n  - {name: plain, tp_mode: tp}\n  - {name: combined, tp_mode: tp, " + flag + "}\n";
}

}  // namespace

TEST_CASE("the combined 1F1B schedule hides every all-to-all but the first forward's and the last backward's",
          "[sim][moe][combined_1f1b]") {
  const sim::ScenarioRun run = sim::run_scenario(model::parse_scenario(job(), "c.yaml"));
  const sim::Metrics& plain = run.variants[0].metrics;
  const sim::Metrics& combined = run.variants[1].metrics;
  // The same all-to-alls in flight.
  CHECK(combined.expert_comm_s == Approx(plain.expert_comm_s).epsilon(1e-9));
  // Closed form: of n micro-batches the first forward runs alone and the last backward too; every other
  // all-to-all has the other micro-batch's compute beside it. Each micro-batch's exposure under the plain order
  // is plain / n (the micro-batches alike), half of it in its forward, half in its backward.
  const double n = 4;
  const double floor = plain.exposed_expert_comm_s / n;
  const double hideable = plain.exposed_expert_comm_s - floor;
  const double hidden = plain.exposed_expert_comm_s - combined.exposed_expert_comm_s;
  CHECK(combined.exposed_expert_comm_s >= 0.9 * floor);  // 10%: the forward's and backward's halves differ a little
  CHECK(hidden <= hideable * 1.1);
  // The middle phases hide nearly all they can (what is left waits where a stage's compute is shorter than the
  // all-to-all it covers).
  CHECK(hidden >= 0.8 * hideable);
  // The step saves less than it hides: the all-to-all kernels take SMs from the compute beside them.
  CHECK(combined.compute_s > plain.compute_s);
  CHECK(plain.time_s - combined.time_s > 0);
  CHECK(plain.time_s - combined.time_s < hidden);
}

TEST_CASE("one micro-batch under the combined schedule is the plain step: nothing runs beside it",
          "[sim][moe][combined_1f1b]") {
  std::string text = job();
  text.replace(text.find("microbatches: 4"), 15, "microbatches: 1");
  const sim::ScenarioRun run = sim::run_scenario(model::parse_scenario(text, "c.yaml"));
  CHECK(run.variants[1].metrics.time_s == Approx(run.variants[0].metrics.time_s).epsilon(1e-12));
}

TEST_CASE("the combined schedule is refused at its key where it is not modelled", "[sim][moe][combined_1f1b]") {
  const auto parse = [](const std::string& text) { return model::parse_scenario(text, "c.yaml"); };
  std::string full = job();
  full.replace(full.find("recompute: none"), 15, "recompute: full");
  CHECK_THROWS_WITH(parse(full), Contains("c.yaml:8:") && Contains("use recompute: none"));
  CHECK_THROWS_WITH(parse(job("", ", pp: 2")), Contains("c.yaml:8:") && Contains("use pp: 1"));
  std::string ep1 = job();
  ep1.replace(ep1.find("ep: 8"), 5, "ep: 1");
  CHECK_THROWS_WITH(parse(ep1), Contains("c.yaml:8:") && Contains("parallelism.ep > 1"));
  std::string both = job("", "", "overlap_moe_expert_parallel_comm: true, two_batch_overlap: true");
  both.replace(both.find("batch: 1"), 8, "batch: 2");
  CHECK_THROWS_WITH(parse(both), Contains("c.yaml:8:") && Contains("two overlap schedules"));
  std::string dense = job();
  dense.replace(dense.find("qwen3-30b-a3b"), 13, "llama-3.1-8b");
  dense.replace(dense.find(", ep: 8"), 7, "");
  CHECK_THROWS_WITH(parse(dense), Contains("needs an MoE model"));
  std::string fsdp = job();
  fsdp.replace(fsdp.find("variants:"), 9, "fsdp: {}\nvariants:");
  CHECK_THROWS_WITH(parse(fsdp), Contains("c.yaml:9:") && Contains("use distributed_optimizer or ddp"));
}
