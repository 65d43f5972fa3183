// The symmetric-memory async-TP ops' streams, copies and barriers, step by step.
#include "model/parallel/symm_mem_async_tp.hpp"

#include "model/parallel/async_tp.hpp"

namespace tpsim::model {
namespace {

// PyTorch issues odd steps on its backend stream and even ones on the current stream.
Stream step_stream(int step) {
  return step % 2 == 1 ? Stream::kCompute2 : Stream::kCompute;
}

// A symmetric-memory barrier on `stream`: every rank signals its peers and waits for theirs; modelled as
// an empty copy-engine step (its latency) with the ring neighbours.
OpId barrier(ProgramBuilder& b, const std::string& name, Stream stream, const std::vector<OpId>& deps) {
  b.set_comm_stream(stream);
  const OpId op = b.exchange(name, 1, -1, 0.0, Transport::kCopyEngine, "barrier", deps);
  b.set_comm_stream(std::nullopt);
  return op;
}

// A pull of `bytes` from rank+recv_offset on `stream`, after the previous pull (of either stream).
OpId pull(ProgramBuilder& b, const std::string& name, int send_offset, int recv_offset, double bytes,
          const std::string& shape, Stream stream, const std::vector<OpId>& deps, std::optional<OpId> previous) {
  b.set_comm_stream(stream);
  const OpId op = b.exchange(name, send_offset, recv_offset, bytes, Transport::kCopyEngine, shape, deps,
                             previous ? std::vector<OpId>{*previous} : std::vector<OpId>{});
  b.set_comm_stream(std::nullopt);
  return op;
}

}  // namespace

std::vector<OpId> symm_mem_gather_gemm(ProgramBuilder& b, const LayerContext& ctx, const std::string& name,
                                       GemmShape full, std::optional<OpId> local_shard) {
  const int tp = b.tp();
  const int64_t shard_tokens = ctx.tokens / tp;
  // Under the float8 TP plan the shard is cast first and every copy moves fp8.
  const bool fp8 = gathers_fp8(b, ctx);
  const double shard_bytes = static_cast<double>(shard_tokens * full.k) * (fp8 ? kFp8Bytes : b.elem_bytes());
  const std::string shape = shape_text(shard_tokens, full.k);
  const GemmShape piece{shard_tokens, full.n, full.k};
  const std::optional<OpId> input = cast_shard_for_gather(b, ctx, name, full, local_shard);
  const std::vector<OpId> local = input ? std::vector<OpId>{*input} : std::vector<OpId>{};
  b.set_a_quantised(fp8);

  const OpId opened = barrier(b, name + ".ag.barrier", Stream::kCompute, local);
  const OpId staged = b.memory(name + ".ag.stage", shard_bytes, shard_bytes, 0, shape, {opened});
  const OpId ready = barrier(b, name + ".ag.staged_barrier", Stream::kCompute, {staged});
  std::vector<OpId> own_deps = local;
  own_deps.push_back(ready);
  std::vector<OpId> pieces = {b.gemm_piece(name, 0, piece, own_deps)};
  std::optional<OpId> previous_pull;
  OpId backend_tail = ready;
  for (int step = 1; step < tp; ++step) {
    const Stream stream = step_stream(step);
    const OpId pulled = pull(b, name + ".ag.pull" + std::to_string(step), -step, step, shard_bytes, shape, stream,
                             {ready}, previous_pull);
    b.mark_saved_as(pulled, SavedAs::kAllGather);
    previous_pull = pulled;
    b.set_compute_stream(stream);
    pieces.push_back(b.gemm_piece(name, step, piece, {pulled}));
    if (stream == Stream::kCompute2) backend_tail = pieces.back();
  }
  // The local shard into the gathered output (for the backward), on the stream after the last step's.
  b.set_compute_stream(step_stream(tp));
  const OpId gathered_own = b.memory(name + ".ag.own_copy", shard_bytes, shard_bytes, 0, shape, local);
  if (step_stream(tp) == Stream::kCompute2) backend_tail = gathered_own;
  b.mark_saved_as(gathered_own, SavedAs::kAllGather);
  b.set_compute_stream(Stream::kCompute);
  b.set_a_quantised(false);
  pieces.push_back(barrier(b, name + ".ag.closing_barrier", Stream::kCompute, {backend_tail, gathered_own}));
  return pieces;
}

std::vector<OpId> symm_mem_gemm_scatter(ProgramBuilder& b, const LayerContext& ctx, const std::string& name,
                                        GemmShape full, const std::vector<OpId>& inputs) {
  const int tp = b.tp();
  const int64_t shard_tokens = ctx.tokens / tp;
  const double shard_bytes = static_cast<double>(shard_tokens * full.n) * b.elem_bytes();
  const std::string shape = shape_text(shard_tokens, full.n);
  const GemmShape piece{shard_tokens, full.n, full.k};
  std::vector<OpId> partials;
  std::optional<OpId> previous_pull;
  for (int step = 1; step < tp; ++step) {
    const Stream stream = step_stream(step);
    const std::string rs = name + ".rs.", at = std::to_string(step);
    b.set_compute_stream(stream);
    const OpId produced = b.gemm_piece(name, step - 1, piece, inputs);
    const OpId filled = barrier(b, rs + "barrier" + at, stream, {produced});
    // This rank's rows of the piece rank-step computed; its own piece went to rank+step.
    const OpId pulled = pull(b, rs + "pull" + at, step, -step, shard_bytes, shape, stream, {filled}, previous_pull);
    previous_pull = pulled;
    partials.push_back(pulled);
    partials.push_back(barrier(b, rs + "read_barrier" + at, stream, {pulled}));
  }
  b.set_compute_stream(Stream::kCompute);
  partials.push_back(b.gemm_piece(name, tp - 1, piece, inputs));
  const OpId reduced = b.memory(name + ".rs.reduce", tp * shard_bytes, shard_bytes,
                                static_cast<double>((tp - 1) * shard_tokens * full.n), shape, partials);
  b.mark_saved_as(reduced, SavedAs::kReduceScatter);
  return {reduced};
}

}  // namespace tpsim::model
