// tpsim validate builds async-TP pipelines and DTP chains with the scenario code (model/parallel/async_tp.*,
// model/parallel/dtp.*). The builders it used before are kept here as the reference: where the two describe the
// same experiment they simulate the same times; where they differ, the difference is the one intended
// (the DTP chain's end, NCCL's per-call latency on each send/recv step of real/'s NCCL pipelines).
#include <catch2/catch.hpp>

#include "calibrate/validation/composite_model.hpp"
#include "composite_points.hpp"
#include "model/parallel/async_tp.hpp"
#include "test_support.hpp"

using namespace tpsim;
using calibrate::Measurement;

namespace {

const sim::EngineOptions kOptions{};

// The hand-written DTP chain: module l's partial added at once, the others' share of module l + 1 - d
// added after it (d counted from 1 for blocking TP: d = delta + 1), every module reduced, the shares
// still outstanding added at the end; d 0: each all-reduce waited for and added at once.
model::LayerGraph hand_written_chain(const Measurement& m, int d) {
  model::LayerGraph graph(m.ranks);
  model::ProgramBuilder b(graph, model::kBf16Bytes);
  b.set_module(-1);
  const double state = static_cast<double>(m.m * m.n) * model::kBf16Bytes;
  const double elements = static_cast<double>(m.m * m.n);
  std::vector<model::OpId> reduced;
  for (int l = 0; l < m.modules; ++l) {
    const std::string name = "module" + std::to_string(l);
    const model::OpId gemm = b.gemm(name + ".gemm", {m.m, m.n, m.k}, {});
    reduced.push_back(b.collective(name + ".allreduce", model::CollectiveKind::kAllReduce, state, "", {gemm}));
    if (d == 0) {
      b.memory(name + ".add", 2 * state, state, elements, "", {reduced.back()});
      continue;
    }
    b.memory(name + ".add_own", 2 * state, state, elements, "", {gemm});
    if (l + 1 - d >= 0) b.memory(name + ".add_late", 3 * state, state, 2 * elements, "", {reduced[l + 1 - d]});
  }
  for (int j = std::max(0, m.modules + 1 - d); d > 0 && j < m.modules; ++j) {
    b.memory("tail.add_late", 3 * state, state, 2 * elements, "", {reduced[j]});
  }
  return graph;
}

// The hand-written async-TP baseline: the collective, then (or after) the whole GEMM.
model::LayerGraph hand_written_async_baseline(const Measurement& m) {
  model::LayerGraph graph(m.ranks);
  model::ProgramBuilder b(graph, model::kBf16Bytes);
  b.set_module(-1);
  if (m.pattern == "allgather_gemm") {
    const model::OpId ag = b.collective("allgather", model::CollectiveKind::kAllGather,
                                        static_cast<double>(m.m * m.k) * model::kBf16Bytes, "", {});
    b.gemm("gemm", {m.m, m.n, m.k}, {ag});
  } else {
    const model::OpId gemm = b.gemm("gemm", {m.m, m.n, m.k}, {});
    b.collective("reducescatter", model::CollectiveKind::kReduceScatter,
                 static_cast<double>(m.m * m.n) * model::kBf16Bytes, "", {gemm});
  }
  return graph;
}

// The hand-written async-TP pipeline: the model's chunked pipeline with every step a device-side exchange.
model::LayerGraph hand_written_pipeline(const Measurement& m) {
  model::LayerGraph graph(m.ranks);
  model::ProgramBuilder b(graph, model::kBf16Bytes);
  b.set_module(-1);
  model::LayerContext ctx;
  ctx.tokens = m.m;
  ctx.local_tokens = m.m / m.ranks;
  ctx.variant.mode = model::TpMode::kAsync;
  ctx.variant.chunks = m.chunks;
  ctx.variant.transport = m.transport == "nccl" ? model::Transport::kSm : model::Transport::kCopyEngine;
  ctx.variant.order = m.transport == "nccl" ? model::ChunkOrder::kRing : model::ChunkOrder::kDirect;
  if (m.pattern == "allgather_gemm") {
    model::async_gather_gemm(b, ctx, "ag_gemm", {m.m, m.n, m.k}, std::nullopt, std::nullopt);
  } else {
    model::async_gemm_scatter(b, ctx, "gemm_rs", {m.m, m.n, m.k}, {});
  }
  return graph;
}

// End times of the graph's GEMMs on rank 0, in issue order.
std::vector<double> gemm_ends(const model::LayerGraph& graph, const sim::Timeline& timeline) {
  std::vector<double> ends;
  for (const sim::OpSpan& s : timeline.spans) {
    if (s.rank == 0 && graph.op(s.op).kind == model::OpKind::kGemm) ends.push_back(s.end_s);
  }
  return ends;
}

Measurement dtp_point(int modules, int delta) {
  Measurement m = test::composite("dtp", "chain", 4096, 8192, 1024, 8);
  m.modules = modules;
  m.delta = delta;
  return m;
}

sim::CostModel cost_with_call_latency(double seconds) {
  sim::CostProfile profile = test::profile_preset("h100-sxm");
  profile.nccl_call_latency_s = seconds;
  return sim::CostModel(test::gpu_preset("h100-sxm"), profile);
}

}  // namespace

TEST_CASE("validate simulates composites without host launch time, as tpsim-real queues them behind a spin") {
  sim::CostProfile profile = test::profile_preset("h100-sxm");
  profile.host_launch_s = 4e-6;
  profile.stream_wait_s = 1.5e-6;
  profile.gpu_wait_s = 1e-6;
  const sim::EngineOptions options = calibrate::composite_engine_options(profile);
  CHECK(options.host_launch_s == 0);
  CHECK(options.stream_wait_s == 0);
  CHECK(options.gpu_wait_s == 1e-6);
}

TEST_CASE("validate's blocking DTP baseline is the hand-written one, to the nanosecond") {
  const sim::CostModel cost = test::h100_cost();
  const Measurement m = dtp_point(8, 2);
  const double scenario_built = sim::simulate(calibrate::composite_graph(m, true), cost, kOptions).makespan_s;
  CHECK(scenario_built == Approx(sim::simulate(hand_written_chain(m, 0), cost, kOptions).makespan_s).epsilon(1e-12));
}

TEST_CASE("validate's DTP chain runs every module whose share is added when the hand-written chain did") {
  const sim::CostModel cost = test::h100_cost();
  for (int delta : {1, 2}) {
    INFO("delta " << delta);
    const Measurement m = dtp_point(10, delta);
    const model::LayerGraph built = calibrate::composite_graph(m, false);
    const model::LayerGraph hand = hand_written_chain(m, delta + 1);  // its d counted blocking TP as 1
    const std::vector<double> built_ends = gemm_ends(built, sim::simulate(built, cost, kOptions));
    const std::vector<double> hand_ends = gemm_ends(hand, sim::simulate(hand, cost, kOptions));
    REQUIRE(built_ends.size() == 10);
    REQUIRE(hand_ends.size() == 10);
    // Until module 10 - delta - 1 (the last whose reduction a later module adds) both issue the same
    // ops; the end differs: the scenario's chain reduces nothing for its last delta + 1 modules and closes
    // with one all-reduce of the residual stream, the hand-written one reduced every module and drained.
    for (int k = 0; k <= 10 - delta - 1; ++k) CHECK(built_ends[k] == Approx(hand_ends[k]).epsilon(1e-12));
  }
}

TEST_CASE("validate's async-TP pipelines and baselines are the hand-written ones where no NCCL call is made per step") {
  const sim::CostModel cost = test::h100_cost();
  for (const char* transport : {"nccl", "copy_engine"}) {
    for (const char* pattern : {"allgather_gemm", "gemm_reducescatter"}) {
      INFO(pattern << " over " << transport);
      Measurement m = test::composite("async_tp", pattern, 16384, 3584, 4096, 8);
      m.chunks = 16;
      m.transport = transport;
      const double baseline = sim::simulate(calibrate::composite_graph(m, true), cost, kOptions).makespan_s;
      CHECK(baseline ==
            Approx(sim::simulate(hand_written_async_baseline(m), cost, kOptions).makespan_s).epsilon(1e-12));
      if (m.transport != "copy_engine") continue;
      const double pipelined = sim::simulate(calibrate::composite_graph(m, false), cost, kOptions).makespan_s;
      CHECK(pipelined == Approx(sim::simulate(hand_written_pipeline(m), cost, kOptions).makespan_s).epsilon(1e-12));
    }
  }
}

TEST_CASE("real/'s NCCL pipeline steps are send/recv calls: each pays NCCL's call latency, none when it is zero") {
  Measurement m = test::composite("async_tp", "allgather_gemm", 2048, 3584, 4096, 8);
  m.chunks = 16;
  m.transport = "nccl";
  const model::LayerGraph built = calibrate::composite_graph(m, false);
  int calls = 0;
  for (const model::Op& op : built.ops()) {
    if (op.kind != model::OpKind::kCollective) continue;
    CHECK(op.collective == model::CollectiveKind::kSendRecv);
    ++calls;
  }
  const int steps = (m.ranks - 1) * (m.chunks / m.ranks);  // each piece of each other rank's shard, one hop each
  CHECK(calls == steps);
  const sim::CostModel free_calls = cost_with_call_latency(0);
  const double device_steps = sim::simulate(hand_written_pipeline(m), free_calls, kOptions).makespan_s;
  CHECK(sim::simulate(built, free_calls, kOptions).makespan_s == Approx(device_steps).epsilon(1e-12));
  // Small GEMM pieces: the ring's calls follow one another on the communication stream, so the latency
  // adds up along it: at least one call's worth, at most every call's.
  const double latency = 20e-6;
  const double with_calls = sim::simulate(built, cost_with_call_latency(latency), kOptions).makespan_s;
  const double without = sim::simulate(hand_written_pipeline(m), cost_with_call_latency(latency), kOptions).makespan_s;
  CHECK(with_calls >= without + latency * (1 - 1e-9));
  CHECK(with_calls <= without + steps * latency * (1 + 1e-9));
}
