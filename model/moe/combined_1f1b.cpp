// The op order of Megatron's combined 1F1B schedule: one micro-batch's forward interleaved with another's backward.
#include "model/moe/combined_1f1b.hpp"

#include <functional>
#include <string>
#include <vector>

#include "model/layers/decoder_layer.hpp"
#include "model/layers/lm_head.hpp"
#include "model/moe/moe_layer.hpp"

namespace tpsim::model {
namespace {

// One micro-batch's state across the phases: what its forward saved, its stream and its gradient.
struct MicroBatch {
  int64_t index = 0;
  std::string prefix;
  std::vector<SavedModule> saved;  // per layer, attention (2 l) and FFN (2 l + 1)
  ModuleInput hidden;
  ModuleInput grad;
  SavedHead head;
  MoeForward moe_forward;
  MoeBackward moe_backward;
};

class Combined {
 public:
  Combined(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& strategy, DataParallelSync& sync)
      : b_(b), ctx_(ctx), strategy_(strategy), sync_(sync), ends_(ctx, strategy) {}

  void run() {
    const int64_t n = ctx_.workload.microbatches;
    std::vector<MicroBatch> mbs(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      mbs[k].index = k;
      mbs[k].prefix = n > 1 ? "mb" + std::to_string(k) + "." : "";
      mbs[k].saved.resize(static_cast<size_t>(2 * ctx_.workload.layers));
    }
    forward_alone(mbs.front());
    for (int64_t k = 1; k < n; ++k) forward_beside_backward(mbs[k], mbs[k - 1]);
    backward_alone(mbs.back());
    b_.set_name_prefix("");
    b_.set_module(-1);
  }

 private:
  bool moe(int64_t layer) const { return ctx_.arch.moe.is_moe(ctx_.workload.first_layer + layer); }

  // Ops issued next belong to `mb`'s forward (backward), in `layer`'s module `module` (-1: the model's ends).
  void as_forward(const MicroBatch& mb, int64_t layer, int module) {
    b_.set_name_prefix(mb.prefix);
    b_.set_stage(OpStage::kForward);
    sync_.set_micro_batch(mb.index);
    place(layer, module);
  }
  void as_backward(const MicroBatch& mb, int64_t layer, int module) {
    b_.set_name_prefix(mb.prefix);
    b_.set_stage(OpStage::kBackward);
    b_.set_fp32_weight_gradients(true, mb.index > 0);
    place(layer, module);
  }
  void place(int64_t layer, int module) {
    if (layer >= 0) b_.set_layer(static_cast<int>(layer));
    b_.set_module(module);
  }

  // The embedding's forward (before the layers) and the head's (after them, with the loss).
  void embedding_forward_of(MicroBatch& mb) {
    if (!ctx_.workload.embedding) return;
    as_forward(mb, -1, -1);
    sync_.before_forward(b_, sync_.embedding_unit());
    mb.hidden = embedding_forward(b_, ends_.ctx(), ends_.strategy());
  }
  void head_forward_of(MicroBatch& mb) {
    mb.grad = mb.hidden;  // an earlier stage's output gradient, from the next stage
    if (!ctx_.workload.head) return;
    as_forward(mb, -1, -1);
    sync_.before_forward(b_, sync_.head_unit());
    mb.head = head_forward(b_, ends_.ctx(), ends_.strategy(), mb.hidden);
  }
  void head_backward_of(MicroBatch& mb) {
    if (!ctx_.workload.head) return;
    as_backward(mb, -1, -1);
    mb.grad = head_backward(b_, ends_.ctx(), ends_.strategy(), mb.head);
    sync_.after_backward(b_, sync_.head_unit(), mb.index);
  }
  void embedding_backward_of(MicroBatch& mb) {
    if (!ctx_.workload.embedding) return;
    as_backward(mb, -1, -1);
    embedding_backward(b_, ends_.ctx(), ends_.strategy(), mb.grad);
    sync_.after_backward(b_, sync_.embedding_unit(), mb.index);
  }

  // A forward layer's stages: attention (Megatron's pre-dispatch computation with the router, here in the
  // dispatch's), the dispatch, the experts (a dense layer's whole FFN), the combine.
  void f_attention(MicroBatch& mb, int64_t l) {
    as_forward(mb, l, static_cast<int>(2 * l));
    sync_.before_forward(b_, sync_.layer_unit(l));
    mb.hidden = attention_forward(b_, ctx_, strategy_, strategy_.enter_module(b_, ctx_, mb.hidden),
                                  &mb.saved[static_cast<size_t>(2 * l)]);
  }
  void f_dispatch(MicroBatch& mb, int64_t l) {
    if (!moe(l)) return;
    as_forward(mb, l, static_cast<int>(2 * l + 1));
    mb.moe_forward = moe_forward_dispatch(b_, ctx_, strategy_, strategy_.enter_module(b_, ctx_, mb.hidden));
  }
  void f_experts(MicroBatch& mb, int64_t l) {
    as_forward(mb, l, static_cast<int>(2 * l + 1));
    if (moe(l)) {
      moe_forward_experts(b_, mb.moe_forward);
    } else {
      mb.hidden = ffn_forward(b_, ctx_, strategy_, strategy_.enter_module(b_, ctx_, mb.hidden),
                              &mb.saved[static_cast<size_t>(2 * l + 1)]);
    }
  }
  void f_combine(MicroBatch& mb, int64_t l) {
    if (!moe(l)) return;
    as_forward(mb, l, static_cast<int>(2 * l + 1));
    mb.hidden = moe_forward_combine(b_, ctx_, strategy_, mb.moe_forward, &mb.saved[static_cast<size_t>(2 * l + 1)]);
  }
  // A backward layer's stages, mirrored: the combine's (its all-to-all), the experts' (ending with the dispatch's
  // all-to-all), the dispatch's compute (permutation, router, norm), attention.
  void b_combine(MicroBatch& mb, int64_t l) {
    if (!moe(l)) return;
    as_backward(mb, l, static_cast<int>(2 * l + 1));
    mb.moe_backward = moe_backward_combine(b_, ctx_, strategy_, mb.saved[static_cast<size_t>(2 * l + 1)], mb.grad);
  }
  void b_experts(MicroBatch& mb, int64_t l) {
    as_backward(mb, l, static_cast<int>(2 * l + 1));
    if (moe(l)) {
      moe_backward_experts(b_, mb.moe_backward);
    } else {
      mb.grad = ffn_backward(b_, ctx_, strategy_, mb.saved[static_cast<size_t>(2 * l + 1)], mb.grad);
      strategy_.after_module_backward(b_, ctx_, mb.grad);
    }
  }
  void b_dispatch(MicroBatch& mb, int64_t l) {
    if (!moe(l)) return;
    as_backward(mb, l, static_cast<int>(2 * l + 1));
    mb.grad = moe_backward_dispatch(b_, ctx_, strategy_, mb.moe_backward);
    strategy_.after_module_backward(b_, ctx_, mb.grad);
  }
  void b_attention(MicroBatch& mb, int64_t l) {
    as_backward(mb, l, static_cast<int>(2 * l));
    mb.grad = attention_backward(b_, ctx_, strategy_, mb.saved[static_cast<size_t>(2 * l)], mb.grad);
    strategy_.after_module_backward(b_, ctx_, mb.grad);
    sync_.after_backward(b_, sync_.layer_unit(l), mb.index);
  }

  void forward_alone(MicroBatch& mb) {
    embedding_forward_of(mb);
    for (int64_t l = 0; l < ctx_.workload.layers; ++l) {
      f_attention(mb, l);
      f_dispatch(mb, l);
      f_experts(mb, l);
      f_combine(mb, l);
    }
    head_forward_of(mb);
  }

  void backward_alone(MicroBatch& mb) {
    head_backward_of(mb);
    for (int64_t l = ctx_.workload.layers - 1; l >= 0; --l) {
      b_combine(mb, l);
      b_experts(mb, l);
      b_dispatch(mb, l);
      b_attention(mb, l);
    }
    embedding_backward_of(mb);
  }

  // One phase: `f`'s forward beside `bw`'s backward, forward layer j paired with backward layer L-1-j in
  // TransformerLayerSchedulePlan.run's order.
  void forward_beside_backward(MicroBatch& f, MicroBatch& bw) {
    embedding_forward_of(f);
    head_backward_of(bw);
    const int64_t layers = ctx_.workload.layers;
    for (int64_t j = 0; j < layers; ++j) {
      const int64_t l = layers - 1 - j;
      b_combine(bw, l);
      f_attention(f, j);
      f_dispatch(f, j);
      b_experts(bw, l);  // ends with the dispatch all-to-all's backward, beside the forward's experts
      f_experts(f, j);
      f_combine(f, j);
      b_dispatch(bw, l);  // the permutation's, router's and norm's backward: Megatron's pre-dispatch backward
      b_attention(bw, l);
    }
    head_forward_of(f);
    embedding_backward_of(bw);
  }

  ProgramBuilder& b_;
  const LayerContext& ctx_;
  TpStrategy& strategy_;
  DataParallelSync& sync_;
  ModelEnds ends_;
};

}  // namespace

void build_combined_1f1b_micro_batches(ProgramBuilder& b, const LayerContext& ctx, TpStrategy& strategy,
                                       DataParallelSync& sync) {
  Combined(b, ctx, strategy, sync).run();
}

}  // namespace tpsim::model
