// Whole-layer behaviour of the variants: equivalences, the no-comm ceiling, when async TP pays.
#include <catch2/catch.hpp>

#include "sim/cost/collective_time.hpp"
#include "sim/engine/isolated_run.hpp"
#include "sim/run/scenario_run.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::TpMode;
using model::Transport;

namespace {

double simulate_time(const model::ArchSpec& arch, const model::Workload& w, int tp, const model::Variant& v,
                     const sim::CostModel& cost) {
  return sim::simulate(model::build_layer_graph(arch, w, tp, v), cost).makespan_s;
}

}  // namespace

TEST_CASE("async with one chunk over the sm transport equals sp") {
  const sim::CostModel cost = test::h100_cost();
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const auto w = test::forward_workload(2, 4096, 2);
  const double sp = simulate_time(arch, w, 8, test::variant(TpMode::kSp), cost);
  const double async = simulate_time(arch, w, 8, test::variant(TpMode::kAsync, 1, Transport::kSm), cost);
  CHECK(async == Approx(sp).epsilon(1e-12));
}

TEST_CASE("one-chunk copy-engine all-gathers take the ring time of the copy engine") {
  // Unfused copy-engine AG then GEMM: the AG is tp-1 relayed steps at the copy engine's rate.
  const sim::CostModel cost = test::h100_cost();
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const auto w = test::forward_workload(1, 4096, 1);
  const int tp = 8;
  const model::LayerGraph graph =
      model::build_layer_graph(arch, w, tp, test::variant(TpMode::kAsync, 1, Transport::kCopyEngine));
  const sim::Timeline timeline = sim::simulate(graph, cost);
  const double unit_bytes = 4096.0 / tp * arch.hidden * 2;
  // Every rank pulls at once: the copy engine's all-ranks rate.
  const double step = sim::step_seconds(cost.exchange_transport(Transport::kCopyEngine), unit_bytes, cost.port_Bps());
  double first_step_start = 1e9, last_step_end = 0;
  for (const auto& span : timeline.spans) {
    const model::Op& op = graph.op(span.op);
    if (span.rank != 0 || op.name.find("attn.qkv_proj.ag.step") == std::string::npos) continue;
    first_step_start = std::min(first_step_start, span.start_s);
    last_step_end = std::max(last_step_end, span.end_s);
  }
  CHECK(last_step_end - first_step_start == Approx((tp - 1) * step).epsilon(1e-7));
}

TEST_CASE("nocomm is never slower than any variant") {
  const sim::CostModel cost = test::h100_cost();
  for (const char* name : {"llama-3.1-8b", "qwen3-0.6b"}) {
    const model::ArchSpec arch = model::load_model_preset(name);
    for (int64_t seq : {512, 4096}) {
      const auto w = test::forward_workload(2, seq, 2);
      const double ceiling = simulate_time(arch, w, 8, test::variant(TpMode::kNoComm), cost);
      for (const auto& v : {test::variant(TpMode::kTp), test::variant(TpMode::kSp),
                            test::variant(TpMode::kAsync, 8, Transport::kCopyEngine),
                            test::variant(TpMode::kAsync, 16, Transport::kSm, model::ChunkOrder::kDirect, true)}) {
        INFO(name << " seq " << seq << " " << model::to_string(v.mode) << " chunks " << v.chunks);
        CHECK(ceiling <= simulate_time(arch, w, 8, v, cost) * (1 + 1e-12));
      }
    }
  }
}

TEST_CASE("async TP gains vanish when communication is negligible") {
  sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  gpu.nvlink_Bps *= 1e4;  // effectively free links (and HBM fast enough to feed them)
  gpu.hbm_Bps *= 1e4;
  sim::CostProfile profile = test::fixed_clock(test::profile_preset("h100-sxm"));
  profile.nccl.step_latency_s = 0;
  profile.nccl_call_latency_s = 0;
  profile.copy_engine.step_latency_s = 0;
  const sim::CostModel cost(gpu, profile);
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  const auto w = test::forward_workload(8, 2048, 2);
  const double sp = simulate_time(arch, w, 8, test::variant(TpMode::kSp), cost);
  const double async = simulate_time(arch, w, 8, test::variant(TpMode::kAsync, 8, Transport::kCopyEngine), cost);
  const double nocomm = simulate_time(arch, w, 8, test::variant(TpMode::kNoComm), cost);
  CHECK(sp == Approx(nocomm).epsilon(1e-3));
  CHECK(async >= sp);  // chunked GEMMs are less efficient and nothing is left to hide
}

TEST_CASE("async TP hides communication when it is comparable to compute") {
  const sim::CostModel cost = test::h100_cost();
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-70b");
  const auto w = test::forward_workload(4, 8192, 2);
  const double sp = simulate_time(arch, w, 8, test::variant(TpMode::kSp), cost);
  const double async = simulate_time(arch, w, 8, test::variant(TpMode::kAsync, 8, Transport::kCopyEngine), cost);
  const double nocomm = simulate_time(arch, w, 8, test::variant(TpMode::kNoComm), cost);
  CHECK(async < sp);
  CHECK(async > nocomm);
}

TEST_CASE("simulating the same graph twice gives identical timelines") {
  const sim::CostModel cost = test::h100_cost();
  const model::ArchSpec arch = model::load_model_preset("qwen3-0.6b");
  const auto graph = model::build_layer_graph(arch, test::forward_workload(2, 1024, 2), 8,
                                              test::variant(TpMode::kAsync, 16, Transport::kSm));
  const sim::Timeline a = sim::simulate(graph, cost);
  const sim::Timeline b = sim::simulate(graph, cost);
  REQUIRE(a.spans.size() == b.spans.size());
  for (size_t i = 0; i < a.spans.size(); ++i) {
    CHECK(a.spans[i].start_s == b.spans[i].start_s);
    CHECK(a.spans[i].end_s == b.spans[i].end_s);
  }
}

TEST_CASE("chunks: auto keeps the fastest valid chunk count and reports it") {
  const model::Scenario s = model::parse_scenario(R"(model: llama-3.1-8b
hardware: {gpu: h100-sxm}
workload: {phase: forward, batch: 2, seq_len: 2048, layers: 2}
parallelism: {tp: 8}
variants:
  - {name: auto, tp_mode: async, chunks: auto}
  - {name: c1, tp_mode: async, chunks: 1}
  - {name: c2, tp_mode: async, chunks: 2}
  - {name: c4, tp_mode: async, chunks: 4}
  - {name: c8, tp_mode: async, chunks: 8}
  - {name: c16, tp_mode: async, chunks: 16}
  - {name: c32, tp_mode: async, chunks: 32}
)",
                                                  "auto.yaml");
  const sim::ScenarioRun run = sim::run_scenario(s);
  const sim::VariantRun& chosen = run.variants.front();
  CHECK(chosen.variant.chunks_auto);
  double best = 1e300;
  int best_chunks = 0;
  for (size_t i = 1; i < run.variants.size(); ++i) {
    if (run.variants[i].metrics.time_s < best) {
      best = run.variants[i].metrics.time_s;
      best_chunks = run.variants[i].variant.chunks;
    }
  }
  CHECK(chosen.metrics.time_s == best);
  CHECK(chosen.variant.chunks == best_chunks);
}

TEST_CASE(
    "a training step's micro-batches run one after the other: each after the first adds the same time, "
    "its gradient accumulation included") {
  // One clock for the three steps (the limiter's window would give each its own, their compute shares differing).
  const sim::CostModel cost = test::h100_fixed_clock_cost();
  const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  model::Workload w = test::train_workload(1, 2048, 2, model::Recompute::kNone, 1, false);
  const double one = simulate_time(arch, w, 8, test::variant(TpMode::kSp), cost);
  w.microbatches = 2;
  const double two = simulate_time(arch, w, 8, test::variant(TpMode::kSp), cost);
  w.microbatches = 3;
  const double three = simulate_time(arch, w, 8, test::variant(TpMode::kSp), cost);
  CHECK(three - two == Approx(two - one).epsilon(1e-9));
  // The later micro-batches' weight gradients also read the fp32 gradients they add into.
  CHECK(two > 2.0 * one);
  w.microbatches = 1;
  // The step is its forward and then a backward with more work than the forward (twice the GEMM FLOPs,
  // the same bytes moved), and the optimizer adds time after the last backward.
  const model::Workload forward = test::forward_workload(1, 2048, 2);
  CHECK(one > 2.0 * simulate_time(arch, forward, 8, test::variant(TpMode::kSp), cost));
  w.microbatches = 1;
  w.optimizer = true;
  CHECK(simulate_time(arch, w, 8, test::variant(TpMode::kSp), cost) > one);
}
