// Rank programs of the composite experiments, mirroring real/'s streams and dependencies.
#include "calibrate/composite_model.hpp"

#include <algorithm>

#include "model/async_tp.hpp"
#include "model/input_error.hpp"
#include "model/program_builder.hpp"
#include "sim/isolated_run.hpp"

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

CompositePrediction predict_overlap(const Measurement& m, const sim::CostModel& cost,
                                    const sim::EngineOptions& options) {
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

model::LayerContext async_context(const Measurement& m, bool chunked) {
  model::LayerContext ctx;
  ctx.tokens = m.m;
  ctx.local_tokens = m.m / m.ranks;
  ctx.elem_bytes = model::kBf16Bytes;
  ctx.variant.mode = model::TpMode::kAsync;
  ctx.variant.chunks = chunked ? m.chunks : 1;
  // real/ runs NCCL pipelines as rings of send/recv kernels and copy-engine ones as direct pulls.
  ctx.variant.transport = m.transport == "nccl" ? model::Transport::kSm : model::Transport::kCopyEngine;
  ctx.variant.order = m.transport == "nccl" ? model::ChunkOrder::kRing : model::ChunkOrder::kDirect;
  return ctx;
}

CompositePrediction predict_async_tp(const Measurement& m, const sim::CostModel& cost,
                                     const sim::EngineOptions& options) {
  const model::GemmShape shape{m.m, m.n, m.k};
  const bool gather = m.pattern == "allgather_gemm";
  model::LayerGraph pipelined(m.ranks), baseline(m.ranks);
  {
    model::ProgramBuilder b(pipelined, model::kBf16Bytes);
    b.set_gemm_fp8(m.dtype == "fp8");
    b.set_module(-1);
    const model::LayerContext ctx = async_context(m, true);
    if (gather) {
      model::async_gather_gemm(b, ctx, "ag_gemm", shape, std::nullopt, std::nullopt);
    } else {
      model::async_gemm_scatter(b, ctx, "gemm_rs", shape, {});
    }
  }
  {
    model::ProgramBuilder b(baseline, model::kBf16Bytes);
    b.set_gemm_fp8(m.dtype == "fp8");
    b.set_module(-1);
    if (gather) {
      const model::OpId ag = b.collective("allgather", model::CollectiveKind::kAllGather,
                                          static_cast<double>(m.m * m.k) * model::kBf16Bytes, "", {});
      b.gemm("gemm", shape, {ag});
    } else {
      const model::OpId gemm = b.gemm("gemm", shape, {});
      b.collective("reducescatter", model::CollectiveKind::kReduceScatter,
                   static_cast<double>(m.m * m.n) * model::kBf16Bytes, "", {gemm});
    }
  }
  CompositePrediction p;
  p.time_s = sim::simulate(pipelined, cost, options).makespan_s;
  p.baseline_s = sim::simulate(baseline, cost, options).makespan_s;
  return p;
}

// real/'s DTP chain: module l's GEMM, its all-reduce on the communication stream, its own partial
// added at once, and the others' share of module l + 1 - delta added before the next GEMM. delta 0
// stands for blocking TP (each all-reduce waited for and added at once).
double simulate_chain(const Measurement& m, int delta, const sim::CostModel& cost, const sim::EngineOptions& options) {
  model::LayerGraph graph(m.ranks);
  model::ProgramBuilder b(graph, model::kBf16Bytes);
  b.set_gemm_fp8(m.dtype == "fp8");
  b.set_module(-1);
  const model::GemmShape shape{m.m, m.n, m.k};
  const double state = static_cast<double>(m.m * m.n) * model::kBf16Bytes;
  const double elements = static_cast<double>(m.m * m.n);
  std::vector<model::OpId> reduced;
  for (int l = 0; l < m.modules; ++l) {
    const std::string name = "module" + std::to_string(l);
    const model::OpId gemm = b.gemm(name + ".gemm", shape, {});
    reduced.push_back(b.collective(name + ".allreduce", model::CollectiveKind::kAllReduce, state, "", {gemm}));
    if (delta == 0) {
      b.memory(name + ".add", 2 * state, state, elements, "", {reduced.back()});
      continue;
    }
    b.memory(name + ".add_own", 2 * state, state, elements, "", {gemm});
    if (l + 1 - delta >= 0) {
      b.memory(name + ".add_late", 3 * state, state, 2 * elements, "", {reduced[static_cast<size_t>(l + 1 - delta)]});
    }
  }
  for (int j = std::max(0, m.modules + 1 - delta); delta > 0 && j < m.modules; ++j) {
    b.memory("tail.add_late" + std::to_string(j), 3 * state, state, 2 * elements, "",
             {reduced[static_cast<size_t>(j)]});
  }
  return sim::simulate(graph, cost, options).makespan_s;
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

CompositePrediction predict_composite(const Measurement& m, const sim::CostModel& cost,
                                      const sim::EngineOptions& options) {
  if (const std::string why = composite_not_modelled(m, cost); !why.empty()) throw InputError(m.origin + ": " + why);
  if (m.kind == "overlap") return predict_overlap(m, cost, options);
  if (m.kind == "async_tp") return predict_async_tp(m, cost, options);
  CompositePrediction p;
  p.time_s = simulate_chain(m, m.delta, cost, options);
  p.baseline_s = simulate_chain(m, 0, cost, options);
  return p;
}

}  // namespace tpsim::calibrate
