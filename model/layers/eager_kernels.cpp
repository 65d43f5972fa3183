// PyTorch eager's kernels of an RMSNorm and of the fp32 cross-entropy loss, and their bytes. Sources: each op's
// autograd formula (torch/csrc/autograd/FunctionsManual.cpp, tools/autograd/derivatives.yaml) and its CUDA kernel
// (aten/src/ATen/native/cuda/SoftMax.cu, LossNLL.cu); the kernel list is the one our H200 trace of an eager
// Llama step shows (real/results/h200-2026-12-04/torch/trace_llama8b_2layers.json.gz, docs/calibration.md).
#include "model/layers/eager_kernels.hpp"

#include "model/graph/op.hpp"

namespace tpsim::model {
namespace {

constexpr double kFp32 = kFp32Bytes;
constexpr double kTokenIdBytes = 8.0;  // int64 targets

}  // namespace

std::vector<EagerKernel> eager_norm_forward(double s) {
  std::vector<EagerKernel> k;
  if (s != kFp32) k.push_back({"to_fp32", s, kFp32, 0, 0, 0, 0});  // x.float()
  k.push_back({"pow", kFp32, kFp32, 0, 0, 0, 1});                  // x.pow(2)
  k.push_back({"mean", kFp32, 0, 0, kFp32, 0, 1});                 // .mean(-1, keepdim=True): [rows, 1]
  k.push_back({"add_eps", 0, 0, kFp32, kFp32, 0, 0});              // + eps, over [rows, 1]
  k.push_back({"rsqrt", 0, 0, kFp32, kFp32, 0, 0});                // torch.rsqrt, over [rows, 1]
  k.push_back({"scale", kFp32, kFp32, kFp32, 0, 0, 1});            // x * rsqrt(...), the [rows, 1] broadcast
  if (s != kFp32) k.push_back({"to_bf16", kFp32, s, 0, 0, 0, 0});  // .type_as(x)
  k.push_back({"weight", s, s, 0, 0, s, 1});                       // * self.weight
  return k;
}

std::vector<EagerKernel> eager_norm_backward(double s) {
  std::vector<EagerKernel> k;
  // MulBackward0 of `* self.weight`: the input's gradient (grad * weight), the weight's (grad * normed, summed
  // over the rows).
  k.push_back({"weight.backward", s, s, 0, 0, s, 1});
  k.push_back({"weight.grad", 2 * s, s, 0, 0, 0, 1});
  k.push_back({"weight.grad.sum", s, 0, 0, 0, 0, 1});
  if (s != kFp32) k.push_back({"to_fp32", s, kFp32, 0, 0, 0, 0});  // ToCopyBackward0 of type_as
  // MulBackward0 of x * r: grad * r, and grad * x summed over the width for r's gradient.
  k.push_back({"scale.backward", kFp32, kFp32, kFp32, 0, 0, 1});
  k.push_back({"scale.grad", 2 * kFp32, kFp32, 0, 0, 0, 1});
  k.push_back({"scale.grad.sum", kFp32, 0, 0, kFp32, 0, 1});
  // RsqrtBackward0 (-0.5 * grad * r^3: a pow and a product) over [rows, 1]; AddBackward0 passes the gradient.
  k.push_back({"rsqrt.backward.pow", 0, 0, kFp32, kFp32, 0, 0});
  k.push_back({"rsqrt.backward", 0, 0, 2 * kFp32, kFp32, 0, 0});
  // MeanBackward1: the [rows, 1] gradient expanded over the width and divided by it.
  k.push_back({"mean.backward", 0, kFp32, kFp32, 0, 0, 1});
  // PowBackward0: grad * 2 * x, as two kernels (x * 2.0, then the product).
  k.push_back({"pow.backward.double", kFp32, kFp32, 0, 0, 0, 1});
  k.push_back({"pow.backward", 2 * kFp32, kFp32, 0, 0, 0, 1});
  // The two gradients of x.float() (from pow and from the scaling) accumulated.
  k.push_back({"accumulate", 2 * kFp32, kFp32, 0, 0, 0, 1});
  if (s != kFp32) k.push_back({"to_bf16", kFp32, s, 0, 0, 0, 0});  // ToCopyBackward0 of x.float()
  return k;
}

std::vector<EagerKernel> eager_loss_forward() {
  return {
      {"to_fp32", kBf16Bytes, kFp32, 0, 0, 0, 0},  // logits.float()
      // cunn_SoftMaxForward, for rows too wide for cunn_SoftMaxForwardSmem's shared memory (a vocabulary row of
      // fp32 is 0.5 MB): an ilpReduce pass over the input for the max, one for the sum of exponentials, one
      // reading it again to write the result (SoftMax.cu).
      {"log_softmax", 3 * kFp32, kFp32, 0, 0, 0, 4},
      // nll_loss_forward_reduce_cuda_kernel_2d: each row's target logit, the target id.
      {"nll", 0, 0, kFp32 + kTokenIdBytes, 0, 0, 0},
  };
}

std::vector<EagerKernel> eager_loss_backward() {
  return {
      // nll_loss_backward zero-fills the [rows, width] fp32 gradient, then writes -1/rows at each target.
      {"nll.backward.zero", 0, kFp32, 0, 0, 0, 0},
      {"nll.backward", 0, 0, kTokenIdBytes, kFp32, 0, 0},
      // cunn_SoftMaxBackward: a pass summing the gradient, one reading it and the output and writing the input's
      // gradient.
      {"log_softmax.backward", 3 * kFp32, kFp32, 0, 0, 0, 3},
      {"to_bf16", kFp32, kBf16Bytes, 0, 0, 0, 0},  // ToCopyBackward0 of logits.float()
  };
}

std::vector<EagerKernel> eager_swiglu_forward(double e) {
  return {{"silu", e, e, 0, 0, 0, 4}, {"mul", 2 * e, e, 0, 0, 0, 1}};
}

std::vector<EagerKernel> eager_swiglu_backward(double e) {
  return {
      {"mul.backward.gate", 2 * e, e, 0, 0, 0, 1},  // grad * up: the gradient of silu's output
      {"mul.backward.up", 2 * e, e, 0, 0, 0, 1},    // grad * silu(gate): up's gradient
      {"silu.backward", 2 * e, e, 0, 0, 0, 6},      // silu_backward(grad, gate)
  };
}

double eager_bytes(const std::vector<EagerKernel>& kernels, int64_t rows, int64_t width) {
  const auto n = static_cast<double>(rows) * static_cast<double>(width);
  double bytes = 0;
  for (const EagerKernel& k : kernels) {
    bytes += n * (k.read_per_element + k.written_per_element) +
             static_cast<double>(rows) * (k.read_per_row + k.written_per_row) +
             static_cast<double>(width) * k.read_per_width;
  }
  return bytes;
}

OpId eager_kernels(ProgramBuilder& b, const std::string& name, const std::vector<EagerKernel>& kernels, int64_t rows,
                   int64_t width, const std::vector<OpId>& deps) {
  const auto n = static_cast<double>(rows) * static_cast<double>(width);
  const auto r = static_cast<double>(rows), w = static_cast<double>(width);
  std::vector<OpId> inputs = deps;
  OpId last = 0;
  for (const EagerKernel& k : kernels) {
    last = b.memory(name + "." + k.name, n * k.read_per_element + r * k.read_per_row + w * k.read_per_width,
                    n * k.written_per_element + r * k.written_per_row, n * k.flops_per_element, shape_text(rows, width),
                    inputs);
    inputs = {last};
  }
  return last;
}

bool eager_norm(const LayerContext& ctx, int module) {
  switch (ctx.workload.implementation.norm) {
    case NormKernel::kEager:
      return true;
    case NormKernel::kEagerFinal:
      // The norm before the LM head, where the pass runs it; a pass of layers alone ends on a norm standing for
      // the next block's, compiled.
      return module == -1 && (ctx.workload.phase == Phase::kTrain ? ctx.workload.head : ctx.workload.whole_model);
    case NormKernel::kFused:
      break;
  }
  return false;
}

double stream_bytes(const LayerContext& ctx, const ProgramBuilder& b) {
  return ctx.workload.implementation.autocast ? kFp32 : b.elem_bytes();
}

}  // namespace tpsim::model
