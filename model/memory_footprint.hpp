// What one GPU holds for a scenario's variant: the weights of the simulated decoder layers and of the
// vocab-parallel embedding and LM head, the KV cache of decode and generate, the activations live at
// once in the largest layer step, and the buffers a TP mode adds; the reports set it against the GPU's
// HBM. Not counted beyond a stated reserve: the CUDA context, NCCL's and cuBLAS's buffers, allocator
// fragmentation. A training step adds fp32 gradients, AdamW's fp32 master weights and moments, and the
// activations its forward saves for the backward (activation_memory.hpp).
#pragma once

#include "model/arch_spec.hpp"
#include "model/variant.hpp"
#include "model/workload.hpp"

namespace tpsim::model {

// Assumed, where nothing measures it: the CUDA context (about 0.5 GiB on Hopper), NCCL's channel buffers
// and cuBLAS's workspace of one TP rank.
inline constexpr double kRuntimeReserveBytes = 2.0 * 1024 * 1024 * 1024;

struct MemoryFootprint {
  double weights_bytes = 0;     // linear layers at the workload's dtype; norms, embedding and LM head bf16
  double kv_cache_bytes = 0;    // decode and generate: K and V of every simulated layer, whole context
  double activation_bytes = 0;  // the residual stream and the largest block's inputs and outputs at once
  double buffer_bytes = 0;      // async: symmetric-memory buffers; dtp: the partials still in flight
  double gradient_bytes = 0;    // train: fp32 gradients of every local parameter
  double optimizer_bytes = 0;   // train: fp32 master weights and AdamW's two fp32 moments
  double reserve_bytes = kRuntimeReserveBytes;

  double total_bytes() const {
    return weights_bytes + kv_cache_bytes + activation_bytes + buffer_bytes + gradient_bytes + optimizer_bytes +
           reserve_bytes;
  }
};

// Per GPU of `tp` ranks; the layers are the workload's (the simulated ones).
MemoryFootprint memory_footprint(const ArchSpec& arch, const Workload& workload, const Variant& variant, int tp);

}  // namespace tpsim::model
