// What runs around the decoder layers: the embedding, and the final norm, LM head and cross-entropy loss
// (Megatron's vocab_parallel_cross_entropy) of a training step or forward pass, forward and backward, or
// the LM head and greedy sampling of an inference pass; vocab-parallel, or replicated on every rank.
#pragma once

#include <memory>

#include "model/parallel/tp_strategy.hpp"

namespace tpsim::model {

// The LM head's saved tensors: its GEMM's input (the final norm's output, gathered where the mode
// gathers), the stream it normed, and what the loss's backward reads: its fp32 softmax and, under a
// vocabulary-parallel head, the all-reduced sum of exponentials that normalises it (the gradient is
// softmax / sum - one-hot), so the backward cannot start before that all-reduce ends.
struct SavedHead {
  ModuleInput stream;
  std::vector<OpId> gemm_input;
  std::vector<OpId> loss;
};

// The context and strategy the embedding, LM head and loss run under: the layers' own, or sequence
// parallelism's blocking NCCL collectives where the implementation runs them outside the compiled blocks
// (model_ends nccl) and the variant is async.
class ModelEnds {
 public:
  ModelEnds(const LayerContext& ctx, TpStrategy& layers);
  const LayerContext& ctx() const { return ctx_; }
  TpStrategy& strategy() { return own_ ? *own_ : layers_; }

 private:
  LayerContext ctx_;
  TpStrategy& layers_;
  std::unique_ptr<TpStrategy> own_;
};

// The embedding lookup of every token in the rank's vocabulary shard, reduced into the stream.
ModuleInput embedding_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp);
// Its backward: the stream's gradient gathered, then added into the rank's rows of the embedding gradient.
void embedding_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const ModuleInput& grad);

// Final norm, LM head over the rank's vocab / tp columns and the loss, with the loss's three all-reduces
// of one fp32 per token (the logits' max, the target's logit, the sum of exponentials).
SavedHead head_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const ModuleInput& stream);
// An inference pass's end: the final norm and LM head over each sequence's last position (every token of a
// decode step), the logits gathered where the vocabulary is sharded, and greedy sampling (an argmax).
void head_inference(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const ModuleInput& stream);
// Its backward: the softmax gradient, the LM head's dgrad (reduced into the stream) and wgrad, and the
// final norm's backward; returns the stream's gradient.
ModuleInput head_backward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& tp, const SavedHead& saved);

// The vocabulary rows one rank holds: vocab / tp, rounded up (the padded vocab-parallel split).
int64_t vocab_shard(const LayerContext& ctx);

}  // namespace tpsim::model
