// The op order of a training micro-batch as two interleaved halves.
#include "model/moe/two_batch_step.hpp"

#include <array>
#include <functional>

#include "model/layers/decoder_layer.hpp"
#include "model/layers/lm_head.hpp"
#include "model/moe/moe_layer.hpp"

namespace tpsim::model {

HalfBatches::HalfBatches(ProgramBuilder& b, std::string prefix, const std::array<std::string, 2>& names)
    : b_(b), prefix_(std::move(prefix)), names_{prefix_ + names[0], prefix_ + names[1]} {}

void HalfBatches::each(const std::function<void(int)>& stage) const {
  for (int half = 0; half < 2; ++half) {
    b_.set_name_prefix(names_[static_cast<size_t>(half)]);
    stage(half);
  }
  b_.set_name_prefix(prefix_);
}

void two_half_layer_forward(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& strategy, const HalfBatches& halves,
                            int64_t layer, std::array<ModuleInput, 2>& hidden,
                            std::array<std::vector<SavedModule>, 2>* saved) {
  const auto attn = static_cast<size_t>(2 * layer), ffn = attn + 1;
  const auto record = [&](int h, size_t module) { return saved ? &(*saved)[static_cast<size_t>(h)][module] : nullptr; };
  halves.each([&](int h) {
    hidden[h] = attention_forward(b, ctx, strategy, strategy.enter_module(b, ctx, hidden[h]), record(h, attn));
  });
  b.set_module(static_cast<int>(ffn));
  if (!ctx.arch.moe.is_moe(b.model_layer())) {  // a dense layer of a mixed stack: nothing to overlap
    halves.each([&](int h) {
      hidden[h] = ffn_forward(b, ctx, strategy, strategy.enter_module(b, ctx, hidden[h]), record(h, ffn));
    });
    return;
  }
  std::array<MoeForward, 2> moe;
  halves.each(
      [&](int h) { moe[h] = moe_forward_dispatch(b, ctx, strategy, strategy.enter_module(b, ctx, hidden[h])); });
  halves.each([&](int h) { moe_forward_experts(b, moe[h]); });
  halves.each([&](int h) { hidden[h] = moe_forward_combine(b, ctx, strategy, moe[h], record(h, ffn)); });
}

void two_batch_micro_batch(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& strategy, DataParallelSync& sync,
                           int64_t mb, const std::string& prefix) {
  const int64_t layers = ctx.workload.layers;
  const HalfBatches halves(b, prefix, {"half0.", "half1."});
  const auto each = [&](const std::function<void(int)>& stage) { halves.each(stage); };
  std::array<std::vector<SavedModule>, 2> saved;
  for (std::vector<SavedModule>& s : saved) s.resize(static_cast<size_t>(2 * layers));
  std::array<ModuleInput, 2> hidden;
  b.set_stage(OpStage::kForward);
  b.set_module(-1);
  ModelEnds ends(ctx, strategy);
  if (ctx.workload.embedding) {
    sync.before_forward(b, sync.embedding_unit());
    each([&](int h) { hidden[h] = embedding_forward(b, ends.ctx(), ends.strategy()); });
  }
  for (int64_t layer = 0; layer < layers; ++layer) {
    b.set_layer(static_cast<int>(layer));
    b.set_module(static_cast<int>(2 * layer));
    sync.before_forward(b, sync.layer_unit(layer));
    two_half_layer_forward(b, ctx, strategy, halves, layer, hidden, &saved);
  }
  b.set_module(-1);
  std::array<ModuleInput, 2> grad = hidden;  // an earlier stage's output gradient, from the next stage
  if (ctx.workload.head) {
    sync.before_forward(b, sync.head_unit());
    each([&](int h) {
      b.set_stage(OpStage::kForward);
      const SavedHead head = head_forward(b, ends.ctx(), ends.strategy(), hidden[h]);
      b.set_stage(OpStage::kBackward);
      grad[h] = head_backward(b, ends.ctx(), ends.strategy(), head);
    });
    sync.after_backward(b, sync.head_unit(), mb);
  }
  b.set_stage(OpStage::kBackward);
  for (int64_t layer = layers - 1; layer >= 0; --layer) {
    const auto attn = static_cast<size_t>(2 * layer), ffn = attn + 1;
    b.set_layer(static_cast<int>(layer));
    b.set_module(static_cast<int>(attn));
    sync.before_backward(b, sync.layer_unit(layer));
    b.set_module(static_cast<int>(ffn));
    if (ctx.arch.moe.is_moe(b.model_layer())) {
      std::array<MoeBackward, 2> moe;
      each([&](int h) { moe[h] = moe_backward_combine(b, ctx, strategy, saved[h][ffn], grad[h]); });
      each([&](int h) { moe_backward_experts(b, moe[h]); });
      each([&](int h) { grad[h] = moe_backward_dispatch(b, ctx, strategy, moe[h]); });
    } else {
      each([&](int h) { grad[h] = ffn_backward(b, ctx, strategy, saved[h][ffn], grad[h]); });
    }
    each([&](int h) { strategy.after_module_backward(b, ctx, grad[h]); });
    b.set_module(static_cast<int>(attn));
    each([&](int h) {
      grad[h] = attention_backward(b, ctx, strategy, saved[h][attn], grad[h]);
      strategy.after_module_backward(b, ctx, grad[h]);
    });
    sync.after_backward(b, sync.layer_unit(layer), mb);
  }
  b.set_module(-1);
  if (ctx.workload.embedding) {
    sync.before_backward(b, sync.embedding_unit());
    each([&](int h) { embedding_backward(b, ends.ctx(), ends.strategy(), grad[h]); });
    sync.after_backward(b, sync.embedding_unit(), mb);
  }
}

}  // namespace tpsim::model
