// What the loss holds for a moment at the start of the backward beyond the forward's saved tensors.
#pragma once

#include "model/graph/workload.hpp"
#include "model/layers/arch_spec.hpp"

namespace tpsim::model {

// Bytes per GPU live at the loss's backward besides what the forward saved (the fp32 log-probabilities are among
// the saved tensors already): under implementation.loss fp32_eager, PyTorch's F.cross_entropy over `logits.float()`
// (TorchTitan's train.py of 2024) runs nll_loss's backward, which writes a zero-filled fp32 gradient of the
// log-probabilities [tokens, vocab columns] (aten/src/ATen/native/cuda/Loss.cu nll_loss_backward_out_cuda:
// grad_input.zero_() then the targets' entries), then log_softmax's backward (SoftMax.cu
// log_softmax_backward_cuda_out) writes the fp32 gradient of the logits while that one is still read: 2 x 4 bytes per
// logit of the rank's vocabulary columns. Over a vocabulary sharded on tp > 1 ranks the same call runs DTensor's
// loss_parallel (TorchTitan enables it with TP: parallel_dims.loss_parallel_enabled, the head's output left sharded,
// Shard(-1)), whose nll_loss backward handler fuses log_softmax's (torch/distributed/tensor/parallel/loss.py
// _nll_loss_and_log_softmax_backward: grad_input = zeros_like(x), then `(grad_input + torch.exp(x)) * grad_output`):
// the zero-filled gradient, exp(x)'s output or the sum and the product live at once beside the saved log-probabilities,
// 3 x 4 bytes per logit. Zero for a fused loss, or where the workload runs no LM head.
double loss_transient_bytes(const ArchSpec& arch, const Workload& workload, int tp);

}  // namespace tpsim::model
