// Two-batch overlap (variant.two_batch_overlap): a pass, or a training micro-batch, as two halves of its sequences
// whose MoE stages interleave (forward, and in training backward too), so that one half's all-to-alls run beside the
// other's compute (SGLang's two-batch overlap; the overlap Megatron's EP A2A overlap and DualPipe build on).
#pragma once

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "model/graph/layer_context.hpp"
#include "model/layers/decoder_layer.hpp"
#include "model/parallel/tp_strategy.hpp"
#include "model/train/ddp_fsdp_sync.hpp"

namespace tpsim::model {

// The two halves of a pass or micro-batch: each stage runs for half 0 then half 1, their ops named <prefix><name>,
// the prefix restored after.
class HalfBatches {
 public:
  HalfBatches(ProgramBuilder& b, std::string prefix, const std::array<std::string, 2>& names);
  void each(const std::function<void(int)>& stage) const;
  // `stage` for half `half` alone.
  void one(int half, const std::function<void()>& stage) const;

 private:
  ProgramBuilder& b_;
  std::string prefix_;
  std::array<std::string, 2> names_;
};

// One layer's forward for both halves, its layer and attention module set by the caller: both attention modules,
// then each MoE stage (dispatch, experts, combine) of half 0 and half 1, or a dense layer's FFN of each in turn.
// `saved` (null: inference) receives, per half, what each module's backward reads (indexed 2 layer and 2 layer + 1).
void two_half_layer_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& strategy, const HalfBatches& halves,
                            int64_t layer, std::array<ModuleInput, 2>& hidden,
                            std::array<std::vector<SavedModule>, 2>* saved);

// Whether a pass's halves run in a decode step's order (two_half_decode_layers): an inference pass of one new token
// per sequence whose experts are not sliced by expert TP.
bool runs_decode_order(const LayerContext& ctx);

// The layers of a decode step as SGLang's two-batch overlap orders them on its one stream
// (python/sglang/srt/batch_overlap/operations_strategy.py, _compute_moe_deepseek_blog_decode: tbo_delta_stages 2,
// five stages per layer): per MoE layer half 0's shared expert, half 1's attention projections, half 0's experts
// (once its dispatch is in), half 1's attention core and router (its dispatch sent), half 0's output (once its
// combine is in), half 1's shared expert, half 0's next attention projections, half 1's experts, half 0's next
// attention core and router, half 1's output. So each half's dispatch is in flight beside its shared expert and the
// other's attention projections, its combine beside the other's attention core. Dense layers run as
// two_half_layer_forward runs them.
void two_half_decode_layers(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& strategy, const HalfBatches& halves,
                            std::array<ModuleInput, 2>& hidden);

// One micro-batch (`ctx`: one half's pass, its ops named <prefix>half0. and half1.): the embedding of each half,
// per layer the data-parallel unit's gather once, both halves' attention modules in turn, then each MoE stage
// (dispatch, experts, combine) of half 0 and half 1 (a dense layer's FFN of each in turn); the head and loss of
// each; backward per layer the MoE stages mirrored (combine's, experts', dispatch's) of half 0 and half 1, both
// attention modules', the unit's reduction once. No recomputation.
void two_batch_micro_batch(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& strategy, DataParallelSync& sync,
                           int64_t mb, const std::string& prefix);

}  // namespace tpsim::model
