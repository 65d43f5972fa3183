// The eager fp32 cross-entropy's transient gradients at the start of the backward.
#include "model/memory/loss_memory.hpp"

#include "model/graph/op.hpp"

namespace tpsim::model {

double loss_transient_bytes(const ArchSpec& arch, const Workload& w, int tp) {
  if (w.phase != Phase::kTrain || !w.head || w.implementation.loss != LossKernel::kFp32Eager) return 0.0;
  // The rank's vocabulary columns (lm_head.cpp's head_columns): all of them where the head is replicated.
  const bool vocab_parallel = w.implementation.model_ends != ModelEndsMode::kReplicated && tp > 1;
  const int64_t columns = vocab_parallel ? (arch.vocab + tp - 1) / tp : arch.vocab;
  const auto logits = static_cast<double>(primary_pass(w).tokens()) * static_cast<double>(columns);
  // nll_loss's gradient and log_softmax's, both fp32; loss_parallel's fused backward holds one more.
  const double fp32_tensors = vocab_parallel ? 3.0 : 2.0;
  return fp32_tensors * kFp32Bytes * logits;
}

}  // namespace tpsim::model
