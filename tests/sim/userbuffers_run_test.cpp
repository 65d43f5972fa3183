// A Megatron-style training layer with Transformer Engine's userbuffers TP overlap against the same layer's blocking
// sequence-parallel collectives: faster, by at least what the blocking collectives cost less what the rings cannot
// hide, and never faster than no communication.
#include <catch2/catch.hpp>

#include "model/scenario.hpp"
#include "sim/run/scenario_run.hpp"
#include "test_support.hpp"

using namespace tpsim;

namespace {

// What cutting `whole` into `pieces` row pieces costs on its own: the pieces' GEMM times less the whole's.
double chunking_cost(const sim::CostModel& cost, model::GemmShape whole, int pieces) {
  model::GemmShape piece = whole;
  piece.m /= pieces;
  const auto bytes = [](const model::GemmShape& s) {
    return static_cast<double>(s.m * s.k + s.k * s.n) + 2.0 * static_cast<double>(s.m * s.n);  // fp8 in, bf16 out
  };
  return pieces * cost.gemm_seconds(piece, bytes(piece), true) - cost.gemm_seconds(whole, bytes(whole), true);
}

}  // namespace

TEST_CASE(
    "a Megatron-style fp8 layer with userbuffers' TP overlap gains at least the blocking collectives it hides, less "
    "what its rings leave exposed, and stays slower than no communication",
    "[sim][userbuffers]") {
  // Llama-3.1-70B's layer at tp 4, 8192 tokens, as the Megatron-Bridge 70B fp8 recipe runs it.
  const std::string text =
      "name: t\nmodel: llama-3.1-70b\nhardware: {gpu: h100-sxm}\n" + test::h100_fixed_clock_calibration() +
      "implementation: {preset: megatron-te, userbuffer_sms: {qkv_dgrad: 4, qkv_wgrad: 24, fc1_dgrad: 2, "
      "fc1_wgrad: 4}}\n"
      "workload: {phase: train, batch: 1, seq_len: 8192, layers: 1, dtype: fp8, fp8_recipe: tensorwise}\n"
      "parallelism: {tp: 4}\nvariants: [{name: sp, tp_mode: sp}, {name: ub, tp_mode: async}, "
      "{name: nocomm, tp_mode: nocomm}]\n";
  const sim::ScenarioRun run = sim::run_scenario(model::parse_scenario(text, "t.yaml"));
  const double sp = run.variants[0].metrics.time_s, ub = run.variants[1].metrics.time_s;
  const double nocomm = run.variants[2].metrics.time_s;
  CHECK(ub > nocomm);
  CHECK(ub < sp);

  const sim::CostModel cost = test::h100_fixed_clock_cost();  // the variants' clock, the same for all three
  const int tp = 4;
  const int64_t t = 8192, h = 8192, qkv = (64 + 2 * 8) * 128 / tp, heads = 64 * 128 / tp, ffn = 28672 / tp;
  // Under sp six bf16 [t, h] collectives stand between a GEMM and its input with nothing else to run: the forward's
  // two all-gathers and two reduce-scatters, the backward's two all-gathers of row-parallel output gradients.
  const double tensor = 2.0 * static_cast<double>(t * h);
  const double gather =
      test::simulate_collective(cost, tp, model::CollectiveKind::kAllGather, tensor, model::CollectiveAlgorithm::kNccl);
  const double scatter = test::simulate_collective(cost, tp, model::CollectiveKind::kReduceScatter, tensor,
                                                   model::CollectiveAlgorithm::kNccl);
  const double blocking = 4 * gather + 2 * scatter;
  // Userbuffers pays instead: the six pipelines' pieces (tp each) against whole GEMMs; per all-gather ring at most
  // its first remote step before the second piece (an fp8 shard), per reduce-scatter its last send (a bf16 shard)
  // and the reduction of the tp partials (reads tp shards, writes one).
  const double chunks = chunking_cost(cost, {t, qkv, h}, tp) + chunking_cost(cost, {t, 2 * ffn, h}, tp) +
                        chunking_cost(cost, {t, h, heads}, tp) + chunking_cost(cost, {t, h, ffn}, tp) +
                        chunking_cost(cost, {t, heads, h}, tp) + chunking_cost(cost, {t, ffn, h}, tp);
  const double shard = static_cast<double>(t / tp * h);
  const double ring_steps = 4 * cost.step_seconds(model::Transport::kCopyEngine, shard);
  const double last_sends =
      2 * (cost.step_seconds(model::Transport::kCopyEngine, 2.0 * shard) + cost.memory_seconds((tp + 1) * 2.0 * shard));
  const double bound = blocking - chunks - ring_steps - last_sends;
  REQUIRE(bound > 0);
  CHECK(sp - ub >= bound);
  CHECK(sp - ub <= sp - nocomm);
}
