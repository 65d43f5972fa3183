// The eager fp32 cross-entropy's transient gradients at the start of the backward.
#include "model/memory/loss_memory.hpp"

#include "model/graph/op.hpp"

namespace tpsim::model {

double loss_transient_bytes(const ArchSpec& arch, const Workload& w, int tp) {
  if (w.phase != Phase::kTrain || !w.head || w.implementation.loss != LossKernel::kFp32Eager) return 0.0;
  // The rank's vocabulary columns (lm_head.cpp's head_columns): all of them where the head is replicated.
  const int64_t columns =
      w.implementation.model_ends == ModelEndsMode::kReplicated ? arch.vocab : (arch.vocab + tp - 1) / tp;
  const auto logits = static_cast<double>(primary_pass(w).tokens()) * static_cast<double>(columns);
  return 2.0 * kFp32Bytes * logits;  // nll_loss's gradient and log_softmax's, both fp32
}

}  // namespace tpsim::model
