// Rank programs of the composite experiments: overlap pairs on the program builder's streams, async-TP
// pipelines and DTP chains from the scenario code (model/parallel/async_tp.*, model/parallel/dtp.*).
#include "calibrate/validation/composite_model.hpp"

#include <algorithm>

#include "base/input_error.hpp"
#include "model/graph/program_builder.hpp"
#include "model/parallel/async_tp.hpp"
#include "model/parallel/dtp.hpp"
#include "sim/cost/power_limit.hpp"
#include "sim/engine/isolated_run.hpp"

namespace tpsim::calibrate {
namespace {

bool is_collective(const std::string& pattern) {
  return model::collective_kind_named(pattern).has_value();
}

// The overlap partner as real/ runs it: a copy-engine copy within the GPU, a memory-bound SM kernel,
// a copy-engine peer copy, or an NCCL collective.
model::OpId add_partner(model::ProgramBuilder& b, const Measurement& m) {
  if (m.pattern == "memcpy_peer") return b.exchange("partner", 1, -1, m.bytes, model::Transport::kCopyEngine, "", {});
  if (is_collective(m.pattern))
    return b.collective("partner", *model::collective_kind_named(m.pattern), m.bytes, "", {});
  model::Op op;
  op.name = "partner";
  op.kind = model::OpKind::kMemory;
  op.stream = m.pattern == "memcpy_device" ? model::Stream::kCopy : model::Stream::kComm;
  op.bytes_read = m.bytes;
  op.bytes_written = m.bytes;
  return b.issue(op, {});
}

int overlap_ranks(const Measurement& m) {
  return m.pattern == "memcpy_peer" ? 2 : std::max(1, m.ranks);
}

double end_of(const sim::Timeline& timeline, model::OpId op) {
  double end = 0;
  for (const sim::OpSpan& span : timeline.spans) {
    if (span.op == op) end = std::max(end, span.end_s);
  }
  return end;
}

// The machine a memcpy_peer point is simulated on. real/ copies one way, from the GEMM's GPU to the next,
// one pair alone; rank programs are symmetric, so the simulated pair copies both ways: at the one-pair
// copy-engine rate (not the rate of every rank pulling at once), and at half the energy per bit, which
// gives each GPU the draw of the one direction real/ moves.
sim::CostModel one_way_copy_machine(const sim::CostModel& cost) {
  sim::CostProfile profile = cost.profile();
  profile.copy_engine_all_ranks_efficiency.reset();
  if (profile.power) profile.power->transfer_pJ_per_bit /= 2;
  return {cost.gpu(), profile, cost.fabric()};
}

CompositePrediction predict_overlap(const Measurement& m, const sim::CostModel& machine,
                                    const sim::EngineOptions& options) {
  const sim::CostModel cost = m.pattern == "memcpy_peer" ? one_way_copy_machine(machine) : machine;
  const model::GemmShape shape{m.m, m.n, m.k};
  const int ranks = overlap_ranks(m);
  auto simulate = [&](bool gemm, bool partner, model::OpId* gemm_id) {
    model::LayerGraph graph(ranks);
    model::ProgramBuilder b(graph, model::kBf16Bytes);
    b.set_gemm_fp8(m.dtype == "fp8");
    b.set_module(-1);
    if (gemm) *gemm_id = b.gemm("gemm", shape, {});
    if (partner) add_partner(b, m);
    return sim::simulate(graph, cost, options);
  };
  CompositePrediction p;
  model::OpId gemm = 0;
  p.gemm_alone_s = simulate(true, false, &gemm).makespan_s;
  p.partner_alone_s = simulate(false, true, &gemm).makespan_s;
  const sim::Timeline together = simulate(true, true, &gemm);
  p.time_s = together.makespan_s;
  p.gemm_overlapped_s = end_of(together, gemm);
  p.baseline_s = p.gemm_alone_s + p.partner_alone_s;
  return p;
}

// async_tp points as a scenario's layers run them: the pipelined run is tp_mode async (real/ runs NCCL
// pipelines as rings of send/recv calls, copy-engine ones as direct pulls), its baseline tp_mode sp.
model::LayerContext async_context(const Measurement& m, bool pipelined) {
  model::LayerContext ctx;
  ctx.tokens = m.m;
  ctx.local_tokens = m.m / m.ranks;
  ctx.elem_bytes = model::kBf16Bytes;
  ctx.variant.mode = pipelined ? model::TpMode::kAsync : model::TpMode::kSp;
  ctx.variant.chunks = m.chunks;
  ctx.variant.transport = m.transport == "nccl" ? model::Transport::kSm : model::Transport::kCopyEngine;
  ctx.variant.order = m.transport == "nccl" ? model::ChunkOrder::kRing : model::ChunkOrder::kDirect;
  return ctx;
}

// dtp points: tp_mode dtp with the point's delta over a residual stream of width N (delta 0: blocking TP).
model::LayerContext chain_context(const Measurement& m, int delta) {
  model::LayerContext ctx;
  ctx.tokens = ctx.local_tokens = m.m;
  ctx.arch.hidden = m.n;
  ctx.elem_bytes = model::kBf16Bytes;
  ctx.variant.mode = model::TpMode::kDtp;
  ctx.variant.delta = delta;
  return ctx;
}

}  // namespace

std::string composite_not_modelled(const Measurement& m, const sim::CostModel& cost) {
  if (!m.is_composite()) return "not a composite measurement";
  if (m.dtype == "fp8") {
    if (const std::string why = cost.fp8_unsupported_reason(); !why.empty()) return "fp8: " + why;
  }
  if (m.kind == "async_tp") {
    if (const std::string why = model::check_chunks(m.chunks, m.ranks); !why.empty()) return why;
    if (m.m % m.chunks != 0 || m.m % m.ranks != 0) return "M does not divide into the chunks";
  }
  return "";
}

namespace {

// The measured pairs and chains are short benchmarks (sim/cost/power_limit.hpp short_benchmark_profile).
sim::CostModel short_benchmark(const sim::CostModel& machine) {
  return {machine.gpu(), sim::short_benchmark_profile(machine.profile()), machine.fabric()};
}

}  // namespace

CompositePrediction predict_composite(const Measurement& m, const sim::CostModel& machine,
                                      const sim::EngineOptions& options) {
  const sim::CostModel cost = short_benchmark(machine);
  if (const std::string why = composite_not_modelled(m, cost); !why.empty()) throw InputError(m.origin + ": " + why);
  if (m.kind == "overlap") return predict_overlap(m, cost, options);
  CompositePrediction p;
  p.time_s = sim::simulate(composite_graph(m, false), cost, options).makespan_s;
  p.baseline_s = sim::simulate(composite_graph(m, true), cost, options).makespan_s;
  return p;
}

sim::EngineOptions composite_engine_options(const sim::CostProfile& profile) {
  return sim::launch_options(profile, true);
}

model::LayerGraph composite_graph(const Measurement& m, bool baseline) {
  if (m.kind != "async_tp" && m.kind != "dtp") throw InputError(m.origin + ": not an async_tp or dtp point");
  model::LayerGraph graph(m.ranks);
  model::ProgramBuilder b(graph, model::kBf16Bytes);
  b.set_gemm_fp8(m.dtype == "fp8");
  const model::GemmShape shape{m.m, m.n, m.k};
  if (m.kind == "dtp") {
    model::build_module_chain(b, chain_context(m, baseline ? 0 : m.delta), shape, m.modules);
    return graph;
  }
  b.set_module(-1);
  b.set_exchanges_as_nccl_calls(m.transport == "nccl");
  const model::LayerContext ctx = async_context(m, !baseline);
  if (m.pattern == "allgather_gemm") {
    model::gather_then_gemm(b, ctx, "ag_gemm", shape, std::nullopt);
  } else {
    model::gemm_then_scatter(b, ctx, "gemm_rs", shape, {});
  }
  return graph;
}

}  // namespace tpsim::calibrate
