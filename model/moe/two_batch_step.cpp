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

void HalfBatches::one(int half, const std::function<void()>& stage) const {
  b_.set_name_prefix(names_[static_cast<size_t>(half)]);
  stage();
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

namespace {

// One half's state between the stages of the decode order.
struct DecodeHalf {
  ModuleInput hidden;
  MoeForward moe;
  std::vector<OpId> shared;
};

void set_position(ProgramBuilder& b, int64_t layer, bool ffn) {
  b.set_layer(static_cast<int>(layer));
  b.set_module(static_cast<int>(2 * layer + (ffn ? 1 : 0)));
}

// The decode order's stages of one half and layer.
class DecodeStages {
 public:
  DecodeStages(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& strategy, const HalfBatches& halves)
      : b_(b), ctx_(ctx), strategy_(strategy), halves_(halves) {}
  // The attention module, `between` issued between its projections and its core, then the router and the dispatch.
  void attend_and_dispatch(int h, int64_t layer, std::function<void()> between) {
    halves_.one(h, [&] {
      DecodeHalf& half = halves_state_[static_cast<size_t>(h)];
      set_position(b_, layer, false);
      b_.set_between_attention_parts(std::move(between));
      half.hidden = attention_forward(b_, ctx_, strategy_, strategy_.enter_module(b_, ctx_, half.hidden), nullptr);
      b_.between_attention_parts();  // an attention module without the split runs it after
      set_position(b_, layer, true);
      half.moe = moe_forward_dispatch(b_, ctx_, strategy_, strategy_.enter_module(b_, ctx_, half.hidden));
    });
  }
  std::function<void()> experts(int h, int64_t layer) {
    return [this, h, layer] {
      halves_.one(h, [&] {
        set_position(b_, layer, true);
        moe_forward_experts(b_, halves_state_[static_cast<size_t>(h)].moe);
      });
    };
  }
  void shared(int h, int64_t layer) {
    halves_.one(h, [&] {
      DecodeHalf& half = halves_state_[static_cast<size_t>(h)];
      set_position(b_, layer, true);
      half.shared = moe_forward_shared(b_, ctx_, strategy_, half.moe);
    });
  }
  void output(int h, int64_t layer) {
    halves_.one(h, [&] {
      DecodeHalf& half = halves_state_[static_cast<size_t>(h)];
      set_position(b_, layer, true);
      half.hidden = moe_forward_output(b_, ctx_, half.moe, half.shared);
    });
  }
  void dense(int64_t layer) {
    std::array<ModuleInput, 2> hidden{halves_state_[0].hidden, halves_state_[1].hidden};
    set_position(b_, layer, false);
    two_half_layer_forward(b_, ctx_, strategy_, halves_, layer, hidden, nullptr);
    halves_state_[0].hidden = hidden[0];
    halves_state_[1].hidden = hidden[1];
  }
  std::array<DecodeHalf, 2>& state() { return halves_state_; }

 private:
  ProgramBuilder& b_;
  const LayerContext& ctx_;
  TpStrategy& strategy_;
  const HalfBatches& halves_;
  std::array<DecodeHalf, 2> halves_state_;
};

}  // namespace

bool runs_decode_order(const LayerContext& ctx) {
  return ctx.workload.is_inference() && ctx.pass.new_tokens == 1 && !ctx.shard.expert_tp;
}

void two_half_decode_layers(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& strategy, const HalfBatches& halves,
                            std::array<ModuleInput, 2>& hidden) {
  DecodeStages stages(b, ctx, strategy, halves);
  stages.state()[0].hidden = hidden[0];
  stages.state()[1].hidden = hidden[1];
  const auto moe_at = [&](int64_t layer) {
    return layer < ctx.workload.layers && ctx.arch.moe.is_moe(ctx.workload.first_layer + layer);
  };
  bool started = false;  // whether half 0's attention and dispatch of the layer are issued
  for (int64_t layer = 0; layer < ctx.workload.layers; ++layer) {
    if (!moe_at(layer)) {
      stages.dense(layer);
      continue;
    }
    if (!started) stages.attend_and_dispatch(0, layer, nullptr);
    stages.shared(0, layer);
    stages.attend_and_dispatch(1, layer, stages.experts(0, layer));
    stages.output(0, layer);
    stages.shared(1, layer);
    started = moe_at(layer + 1);
    if (started) {
      stages.attend_and_dispatch(0, layer + 1, stages.experts(1, layer));
    } else {
      stages.experts(1, layer)();
    }
    stages.output(1, layer);
  }
  hidden[0] = stages.state()[0].hidden;
  hidden[1] = stages.state()[1].hidden;
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
