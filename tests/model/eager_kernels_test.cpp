// PyTorch eager's memory-bound kernels (implementation.rms_norm, loss, autocast): each preset's norm and loss
// bytes, and autocast's weight casts, against closed forms derived here from the code each follows.
#include <catch2/catch.hpp>
#include <string>

#include "input/presets.hpp"
#include "model/graph/graph_builder.hpp"
#include "model/layers/eager_kernels.hpp"
#include "model/layers/implementation.hpp"
#include "test_support.hpp"

using namespace tpsim;

namespace {

const model::ArchSpec& llama8b() {
  static const model::ArchSpec arch = model::load_model_preset("llama-3.1-8b");
  return arch;
}

constexpr int64_t kTokens = 4096;

model::LayerGraph train_graph(const model::Implementation& implementation) {
  model::Workload w = test::train_workload(1, kTokens, 2);
  w.implementation = implementation;
  return model::build_layer_graph(llama8b(), w, 1, test::variant(model::TpMode::kNoComm));
}

// Bytes (read + written) of the memory-bound ops whose names start with `prefix`, and how many there are.
struct Sum {
  double bytes = 0;
  int kernels = 0;
};
Sum memory_under(const model::LayerGraph& g, const std::string& prefix) {
  Sum s;
  for (const model::Op& op : g.ops()) {
    if (op.kind != model::OpKind::kMemory || op.name.rfind(prefix, 0) != 0) continue;
    s.bytes += op.bytes_read + op.bytes_written;
    ++s.kernels;
  }
  return s;
}

model::Implementation with(model::Implementation i, model::NormKernel norm, model::LossKernel loss) {
  i.name = "custom";
  i.norm = norm;
  i.loss = loss;
  return i;
}

}  // namespace

TEST_CASE("an eager RMSNorm moves the bytes of TorchTitan's expression, kernel by kernel, forward and backward",
          "[model][eager]") {
  const double n = static_cast<double>(kTokens * llama8b().hidden), rows = kTokens, h = llama8b().hidden;
  // bf16 x: x.float() 2+4, pow 4+4, mean 4, scale 4+4, type_as 4+2, * weight 2+2 = 36 per element; per row the
  // mean's output 4, the eps add 4+4, rsqrt 4+4 and the scale's read of it 4; the bf16 weight once.
  const double forward = 36 * n + 24 * rows + 2 * h;
  // Backward: grad*w 2+2, grad*normed 4+2, its sum 2, the upcast 2+4, grad*r 4+4, grad*x 8+4, its sum 4, the mean's
  // expansion 4, pow's 2x 4+4 and product 8+4, the accumulation 8+4, the downcast 4+2 = 84 per element; per row:
  // grad*r reads r 4, the sum writes 4, rsqrt's backward 8 and 12, the mean's backward reads 4; the weight once.
  const double backward = 84 * n + 32 * rows + 2 * h;
  const model::LayerGraph g =
      train_graph(with(model::Implementation{}, model::NormKernel::kEager, model::LossKernel::kFused));
  const Sum f = memory_under(g, "L0.attn.norm."), bwd = memory_under(g, "L0.attn.norm.backward.");
  CHECK(bwd.bytes == Approx(backward));
  CHECK(bwd.kernels == 14);
  CHECK(f.bytes - bwd.bytes == Approx(forward));  // "L0.attn.norm." also names the backward's
  CHECK(f.kernels - bwd.kernels == 8);
  // Every norm is eager, the final one too, and none continues a residual add.
  CHECK(memory_under(g, "final.norm.").kernels == 8 + 14);
  CHECK(memory_under(g, "L1.ffn.norm.").kernels == 8 + 14);
  // An fp32 stream (autocast) casts nothing: pow 8, mean 4, scale 8, weight 8 = 28 per element forward.
  CHECK(model::eager_bytes(model::eager_norm_forward(4.0), kTokens, llama8b().hidden) ==
        Approx(28 * n + 24 * rows + 4 * h));
}

TEST_CASE("each preset's norm and loss kernels: eager where its framework's code leaves them eager", "[model][eager]") {
  const double h = llama8b().hidden, rows = kTokens;
  const double v = llama8b().vocab, logits = rows * v;
  const double fused_norm = 2 * rows * h * 2 + 2 * h;  // reads the bf16 stream and weight, writes the stream
  const double eager_norm = 36 * rows * h + 24 * rows + 2 * h;
  // The eager loss: upcast 2+4, log_softmax's three reads and a write (16), nll's target per row (4+8); backward the
  // zero fill 4, nll's scatter per row (8+4), log_softmax's backward 16, the downcast 4+2.
  const double eager_loss = (6 + 16 + 4 + 16 + 6) * logits + 24 * rows;
  // The fused loss: max (bf16 logits, fp32 per row), exp kept in fp32 (2+4), its backward (4+2).
  const double fused_loss = (2 + 6 + 6) * logits + 4 * rows;
  struct Expected {
    const char* preset;
    double final_norm, loss;
  };
  for (const Expected& e :
       {Expected{"torchtitan-2024", eager_norm, eager_loss}, Expected{"torchtitan-2025", eager_norm, fused_loss},
        Expected{"megatron-te", fused_norm, fused_loss}}) {
    INFO(e.preset);
    const model::LayerGraph g = train_graph(model::implementation_preset(e.preset));
    const Sum norm = memory_under(g, "final.norm"), backward = memory_under(g, "final.norm.backward");
    CHECK(norm.bytes - backward.bytes == Approx(e.final_norm));
    CHECK(memory_under(g, "loss").bytes == Approx(e.loss));
  }
  // TorchTitan's compiled blocks keep one kernel per norm inside the layers.
  const model::LayerGraph titan = train_graph(model::implementation_preset("torchtitan-2024"));
  CHECK(memory_under(titan, "L1.attn.norm").kernels == 2);  // the norm and its backward
  // A forward pass of layers alone ends on a norm standing for the next compiled block's: one kernel.
  model::Workload layers = test::forward_workload(1, kTokens, 2);
  layers.implementation = model::implementation_preset("torchtitan-2024");
  const model::LayerGraph forward =
      model::build_layer_graph(llama8b(), layers, 1, test::variant(model::TpMode::kNoComm));
  CHECK(memory_under(forward, "final.norm").kernels == 1);
  layers.whole_model = true;  // with the LM head and loss, the final norm is eager
  CHECK(
      memory_under(model::build_layer_graph(llama8b(), layers, 1, test::variant(model::TpMode::kNoComm)), "final.norm")
          .kernels == 8);
}

TEST_CASE("autocast casts each linear's fp32 weight per forward and its gradient back per backward", "[model][eager]") {
  model::Implementation i;
  i.name = "custom";
  i.autocast = true;
  const model::LayerGraph g = train_graph(i);
  const model::ArchSpec& a = llama8b();
  const double per_layer = static_cast<double>(a.hidden) * (a.heads * a.head_dim + 2 * a.kv_heads * a.head_dim) +
                           static_cast<double>(a.heads * a.head_dim) * a.hidden + 3.0 * a.hidden * a.intermediate;
  const double weights = 2 * per_layer + static_cast<double>(a.hidden) * a.vocab;  // two layers and the LM head
  double casts = 0, grads = 0;
  int cast_kernels = 0, grad_kernels = 0;
  for (const model::Op& op : g.ops()) {
    const bool cast = op.name.find(".weight_cast") != std::string::npos;
    const bool grad = op.name.find(".grad_cast") != std::string::npos;
    if (cast) casts += op.bytes_read + op.bytes_written, ++cast_kernels;
    if (grad) grads += op.bytes_read + op.bytes_written, ++grad_kernels;
  }
  CHECK(casts == Approx((4 + 2) * weights));  // read fp32, write bf16
  CHECK(grads == Approx((2 + 4) * weights));  // read bf16, write fp32
  CHECK(cast_kernels == 2 * 4 + 1);           // qkv, o, gate_up, down per layer and the LM head
  CHECK(grad_kernels == cast_kernels);
  // The weight-gradient GEMM writes bf16 under autocast; its cast writes the fp32.
  CHECK(test::op_named(g, "L0.ffn.down_proj.wgrad").bytes_written ==
        Approx(2.0 * static_cast<double>(a.intermediate) * a.hidden));
}

TEST_CASE("an eager SwiGLU runs silu and the product apart, and three kernels in the backward", "[model][eager]") {
  model::Implementation i;
  i.name = "custom";
  i.swiglu = model::SwigluKernel::kEager;
  const model::LayerGraph g = train_graph(i);
  const double f = static_cast<double>(kTokens * llama8b().intermediate);
  // silu 2+2 and the product 4+2 per bf16 element of [tokens, ffn]; backward: two products 4+2 each, silu's 4+2.
  const Sum all = memory_under(g, "L0.ffn.swiglu."), backward = memory_under(g, "L0.ffn.swiglu.backward.");
  CHECK(all.bytes - backward.bytes == Approx(10 * f));
  CHECK(backward.bytes == Approx(18 * f));
  CHECK(all.kernels == 2 + 3);
}
