// Embedding, LM head and loss ops with their FLOP and byte counts.
#include "model/layers/lm_head.hpp"

#include "model/layers/eager_kernels.hpp"

namespace tpsim::model {
namespace {

constexpr double kFp32 = 4.0;
constexpr double kTokenIdBytes = 8.0;  // int64 token ids

bool replicated(const LayerContext& ctx) {
  return ctx.workload.implementation.model_ends == ModelEndsMode::kReplicated;
}

// The LM head's output columns on one rank: the whole vocabulary where the head is replicated.
int64_t head_columns(const LayerContext& ctx) {
  return replicated(ctx) ? ctx.arch.vocab : vocab_shard(ctx);
}

ColumnLinear head_linear(const LayerContext& ctx) {
  return {"final.norm", "lm_head", head_columns(ctx), true};
}

bool eager_loss(const LayerContext& ctx) {
  return ctx.workload.implementation.loss == LossKernel::kFp32Eager;
}

// The eager loss's forward over the rank's [t, v] logits (eager_loss_forward); returns what the backward reads:
// log_softmax's fp32 output and, under a vocabulary-parallel head (DTensor's loss_parallel), the all-reduced sum of
// exponentials it subtracts the log of. There log_softmax's max pass runs apart and the rows' max, target logit and
// sum of exponentials are all-reduced between the passes, the bytes unchanged.
std::vector<OpId> eager_loss_forward_ops(ProgramBuilder& b, int64_t t, int64_t v, bool reduce,
                                         const std::vector<OpId>& logits) {
  const std::vector<EagerKernel> kernels = eager_loss_forward();  // to_fp32, log_softmax, nll
  const OpId up = eager_kernels(b, "loss", {kernels[0]}, t, v, logits);
  if (!reduce) {
    const OpId softmax = eager_kernels(b, "loss", {kernels[1]}, t, v, {up});
    eager_kernels(b, "loss", {kernels[2]}, t, v, {softmax});
    return {softmax};
  }
  const auto n = static_cast<double>(t * v), per_token = static_cast<double>(t) * kFp32;
  const OpId max = b.memory("loss.max", n * kFp32, per_token, n, shape_text(t, v), {up});
  const OpId max_reduced = b.collective("loss.max.all_reduce", CollectiveKind::kAllReduce, per_token, "[T]", {max});
  EagerKernel rest = kernels[1];
  rest.read_per_element -= kFp32;  // the max pass ran above
  const OpId softmax = eager_kernels(b, "loss", {rest}, t, v, {up, max_reduced});
  const OpId nll = eager_kernels(b, "loss", {kernels[2]}, t, v, {softmax});
  const OpId target = b.collective("loss.target.all_reduce", CollectiveKind::kAllReduce, per_token, "[T]", {nll});
  return {softmax, b.collective("loss.sum_exp.all_reduce", CollectiveKind::kAllReduce, per_token, "[T]", {target})};
}

}  // namespace

int64_t vocab_shard(const LayerContext& ctx) {
  return (ctx.arch.vocab + ctx.shard.tp - 1) / ctx.shard.tp;
}

ModelEnds::ModelEnds(const LayerContext& ctx, TpStrategy& layers) : ctx_(ctx), layers_(layers) {
  if (ctx.workload.implementation.model_ends != ModelEndsMode::kNccl || ctx.variant.mode != TpMode::kAsync) return;
  ctx_.variant.mode = TpMode::kSp;
  own_ = make_tp_strategy(ctx_.variant, static_cast<int>(2 * ctx.workload.layers));
}

namespace {

// Learned absolute positions (GPT-2's and GPT-BigCode's wpe, a table every TP rank holds whole): the rows of the
// stream's positions looked up, then added to the token embeddings (inputs_embeds + position_embeds in
// modeling_gpt2.py; Megatron's word + position embeddings): two memory-bound kernels over the rank's rows.
ModuleInput add_positions(ProgramBuilder& b, const LayerContext& ctx, const ModuleInput& stream) {
  if (ctx.arch.style.learned_positions == 0) return stream;
  const double rows = static_cast<double>(ctx.local_tokens * ctx.arch.hidden) * b.elem_bytes();
  const std::string shape = shape_text(ctx.local_tokens, ctx.arch.hidden);
  const OpId positions = b.memory("embedding.positions.lookup", rows, rows, 0.0, shape, {});
  return ModuleInput{b.memory("embedding.positions.add", 2.0 * rows, rows, rows / b.elem_bytes(), shape,
                              joined(stream.deps(), {positions}))};
}

// Their gradient: the stream's gradient rows added into the table's gradient rows (embedding_dense_backward).
void positions_backward(ProgramBuilder& b, const LayerContext& ctx, const ModuleInput& grad) {
  if (ctx.arch.style.learned_positions == 0) return;
  const double rows = static_cast<double>(ctx.local_tokens * ctx.arch.hidden) * b.elem_bytes();
  b.memory("embedding.positions.backward", 2.0 * rows, rows, rows / b.elem_bytes(),
           shape_text(ctx.local_tokens, ctx.arch.hidden), grad.deps());
}

}  // namespace

ModuleInput embedding_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp) {
  if (replicated(ctx)) {
    // Every rank holds the whole table and looks up the rows of the tokens it keeps.
    const double rows = static_cast<double>(ctx.local_tokens * ctx.arch.hidden) * b.elem_bytes();
    return add_positions(
        b, ctx,
        ModuleInput{b.memory("embedding.lookup", rows, rows, 0.0, shape_text(ctx.local_tokens, ctx.arch.hidden), {})});
  }
  const double bytes = static_cast<double>(ctx.tokens * ctx.arch.hidden) * b.elem_bytes();
  // Every token's row if the rank holds it, zeros otherwise: reads at most the tokens' rows, writes [T, H].
  const OpId partial =
      b.memory("embedding.lookup", bytes / ctx.shard.tp, bytes, 0.0, shape_text(ctx.tokens, ctx.arch.hidden), {});
  return add_positions(b, ctx, tp.reduce_partial(b, ctx, "embedding", partial));
}

void embedding_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const ModuleInput& grad) {
  positions_backward(b, ctx, grad);
  const OpId whole = tp.gather_gradient(b, ctx, "embedding.grad", grad);
  // The rank's tokens' gradient rows added into its shard of the embedding gradient.
  const double rows = static_cast<double>(ctx.tokens * ctx.arch.hidden) * b.elem_bytes() / ctx.shard.tp;
  b.memory("embedding.backward", 2.0 * rows, rows, rows / b.elem_bytes(), shape_text(ctx.tokens, ctx.arch.hidden),
           {whole});
}

SavedHead head_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const ModuleInput& stream) {
  const ColumnOutput logits = [&] {
    const HighPrecisionGemms bf16(b);
    return tp.column_forward(b, ctx, head_linear(ctx), stream);
  }();
  const int64_t t = ctx.tokens, v = head_columns(ctx);
  const double logit_bytes = static_cast<double>(t * v) * b.elem_bytes();
  const double fp32_logits = static_cast<double>(t * v) * kFp32;
  const double per_token = static_cast<double>(t) * kFp32;
  const std::string shape = shape_text(t, v);
  // A replicated head's logits are whole on every rank: the loss needs no reduction.
  const bool reduce = tp.communicates() && !replicated(ctx);
  if (eager_loss(ctx))
    return SavedHead{stream, logits.gemm_input, eager_loss_forward_ops(b, t, v, reduce, logits.output)};
  OpId max = b.memory("loss.max", logit_bytes, per_token, static_cast<double>(t * v), shape, logits.output);
  if (reduce) max = b.collective("loss.max.all_reduce", CollectiveKind::kAllReduce, per_token, "[T]", {max});
  // exp(logit - max) in fp32, kept for the backward, its sum and the target's logit.
  std::vector<OpId> inputs = logits.output;
  inputs.push_back(max);
  const OpId softmax =
      b.memory("loss.softmax", logit_bytes, fp32_logits, 3.0 * static_cast<double>(t * v), shape, inputs);
  if (!reduce) return SavedHead{stream, logits.gemm_input, {softmax}};
  const OpId target = b.collective("loss.target.all_reduce", CollectiveKind::kAllReduce, per_token, "[T]", {softmax});
  const OpId sum = b.collective("loss.sum_exp.all_reduce", CollectiveKind::kAllReduce, per_token, "[T]", {target});
  return SavedHead{stream, logits.gemm_input, {softmax, sum}};
}

void head_inference(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const ModuleInput& stream) {
  // The last position of each sequence (a decode step's every token) is normed and projected.
  LayerContext last = ctx;
  last.tokens = ctx.workload.batch;
  last.local_tokens = last.tokens;
  const ColumnOutput logits = [&] {
    const HighPrecisionGemms bf16(b);
    return tp.column_forward(b, last, head_linear(last), stream);
  }();
  const int64_t rows = last.tokens, cols = head_columns(last);
  std::vector<OpId> whole = logits.output;
  if (tp.communicates() && !replicated(last)) {
    // Each rank's vocabulary shard of the logits gathered to every rank.
    const double gathered = static_cast<double>(rows * cols * last.shard.tp) * b.elem_bytes();
    whole = {b.collective("lm_head.all_gather", CollectiveKind::kAllGather, gathered,
                          shape_text(rows, cols * last.shard.tp), whole)};
  }
  // Greedy sampling: an argmax over each row of the vocabulary.
  const int64_t vocab = replicated(last) ? cols : cols * last.shard.tp;
  b.memory("sample.argmax", static_cast<double>(rows * vocab) * b.elem_bytes(),
           static_cast<double>(rows) * kTokenIdBytes, static_cast<double>(rows * vocab), shape_text(rows, vocab),
           whole);
}

ModuleInput head_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const SavedHead& saved) {
  const int64_t t = ctx.tokens, v = head_columns(ctx);
  const OpId d_logits = eager_loss(ctx) ? eager_kernels(b, "loss.backward", eager_loss_backward(), t, v, saved.loss)
                                        : b.memory("loss.backward", static_cast<double>(t * v) * kFp32,
                                                   static_cast<double>(t * v) * b.elem_bytes(),
                                                   2.0 * static_cast<double>(t * v), shape_text(t, v), saved.loss);
  const HighPrecisionGemms bf16(b);
  return ModuleInput{tp.column_backward(b, ctx, head_linear(ctx), {d_logits}, saved.gemm_input, saved.stream)};
}

}  // namespace tpsim::model
