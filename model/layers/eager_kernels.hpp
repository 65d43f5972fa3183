// The memory-bound kernels PyTorch eager launches for an RMSNorm and for the cross-entropy loss over fp32 logits,
// each with its bytes per element of the op's [rows, width] tensor, and the ops that issue them.
#pragma once

#include <string>
#include <vector>

#include "model/graph/layer_context.hpp"
#include "model/graph/program_builder.hpp"

namespace tpsim::model {

// One eager kernel over a [rows, width] tensor: bytes read and written per element, per row (the [rows, 1]
// statistics an RMSNorm keeps; the target's logit), and once (the norm's weight, read whole by every row).
struct EagerKernel {
  std::string name;
  double read_per_element = 0, written_per_element = 0;
  double read_per_row = 0, written_per_row = 0;
  double read_per_width = 0;
  double flops_per_element = 0;
};

// Llama's RMSNorm as TorchTitan writes it, `_norm(x.float()).type_as(x) * self.weight` with
// `_norm(x) = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)` (torchtitan/models/norms.py), over a
// stream of `stream_bytes` per element (2: bf16; 4: an fp32 stream, where x.float() and type_as cast nothing)
// and a weight of the same width: the forward's kernels, and autograd's for its backward.
std::vector<EagerKernel> eager_norm_forward(double stream_bytes);
std::vector<EagerKernel> eager_norm_backward(double stream_bytes);
// F.cross_entropy(logits.float(), targets) over bf16 logits, eager: the forward's kernels and the backward's.
std::vector<EagerKernel> eager_loss_forward();
std::vector<EagerKernel> eager_loss_backward();

// SwiGLU as eager PyTorch runs TorchTitan's `F.silu(self.w1(x)) * self.w3(x)` over [rows, ffn] bf16 (`e` bytes per
// element): silu, the product; backward, MulBackward0's two products and silu_backward.
std::vector<EagerKernel> eager_swiglu_forward(double e);
std::vector<EagerKernel> eager_swiglu_backward(double e);

// The bytes `kernels` move over [rows, width]: what a test derives in closed form.
double eager_bytes(const std::vector<EagerKernel>& kernels, int64_t rows, int64_t width);

// Issues `kernels` over [rows, width] in turn, the first after `deps`, each named <name>.<kernel>; returns the
// last.
OpId eager_kernels(ProgramBuilder& b, const std::string& name, const std::vector<EagerKernel>& kernels, int64_t rows,
                   int64_t width, const std::vector<OpId>& deps);

// Whether the implementation runs the RMSNorm of module `module` (ProgramBuilder's numbering: -1 the final norm)
// as eager PyTorch's kernels (implementation.rms_norm), and the bytes per element of the stream it reads (fp32
// under autocast, whose embedding writes fp32 rows; else the layer's element width).
bool eager_norm(const LayerContext& ctx, int module);
double stream_bytes(const LayerContext& ctx, const ProgramBuilder& b);

}  // namespace tpsim::model
