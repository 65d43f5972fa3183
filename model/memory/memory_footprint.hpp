// What one GPU holds for a scenario's variant: the tensors (the weights of the decoder layers and of the
// vocab-parallel embedding and LM head, the KV cache of decode and generate, the activations live at once in
// the largest layer step, the buffers a TP mode adds; a training step adds fp32 gradients, AdamW's fp32 master
// weights and moments, and the activations its forward saves for the backward, activation_memory.hpp), and what
// the runtime holds beside them (sim/cost/runtime_memory.hpp fills those parts in: the caching allocator's reserve,
// cuBLAS's workspaces, the CUDA context, NCCL's buffers). Memory is the whole model's: reports count every layer
// whatever `workload.layers` simulates (whole_model_workload).
#pragma once

#include "model/graph/variant.hpp"
#include "model/graph/workload.hpp"
#include "model/layers/arch_spec.hpp"
#include "model/memory/activation_memory.hpp"

namespace tpsim::model {

struct MemoryFootprint {
  // Tensors.
  double weights_bytes = 0;     // linear layers at the workload's dtype; norms, embedding and LM head bf16
  double kv_cache_bytes = 0;    // decode and generate: K and V of every layer, whole context
  double activation_bytes = 0;  // the residual stream and the largest block's inputs and outputs at once
  // async: its pipelines' buffers (but PyTorch's symmetric memory, below); dtp: the partials still in flight; cp:
  // K/V exchange buffers.
  double buffer_bytes = 0;
  double gradient_bytes = 0;   // train: fp32 gradients of every local parameter
  double optimizer_bytes = 0;  // train: fp32 master weights and AdamW's two fp32 moments
  // What the runtime adds (zero until sim/cost/runtime_memory.hpp fills it in for a GPU).
  double workspace_bytes = 0;          // cuBLAS and cuBLASLt workspaces, taken through the caching allocator
  double allocator_reserve_bytes = 0;  // what the caching allocator holds beyond its tensors at their peak
  double context_bytes = 0;            // the CUDA context, its loaded kernels and library handles
  double nccl_bytes = 0;               // NCCL's channel and peer buffers, outside the caching allocator
  // async_tp symm_mem: PyTorch's symmetric-memory workspace, mapped by its own allocator outside the caching one
  // (symmetric_workspace_bytes).
  double symmetric_memory_bytes = 0;

  double tensor_bytes() const {
    return weights_bytes + kv_cache_bytes + activation_bytes + buffer_bytes + gradient_bytes + optimizer_bytes;
  }
  // What PyTorch's max_memory_reserved() reports: the tensors, the workspaces and the allocator's reserve.
  double peak_reserved_bytes() const { return tensor_bytes() + workspace_bytes + allocator_reserve_bytes; }
  // What the device holds (nvidia-smi's used memory): the reserve, the context, NCCL's buffers and PyTorch's
  // symmetric memory. What must fit.
  double device_bytes() const { return peak_reserved_bytes() + context_bytes + nccl_bytes + symmetric_memory_bytes; }
};

// PyTorch's symmetric-memory workspace under async_tp symm_mem (0 otherwise): one per TP group, grown to its largest
// request (torch/distributed/_symmetric_memory get_symm_mem_workspace), mapped by CUDASymmetricMemoryAllocator with
// cuMemCreate, so outside the caching allocator and its max_memory_reserved. The largest request is the
// reduce-scatter's two chunks of its output (_pipelined_produce_and_all2all: each rank's [tokens / tp, hidden]
// double-buffered); the all-gather's is the rank's shard (_pipelined_all_gather_and_consume), its gathered output an
// ordinary tensor as under sp.
double symmetric_workspace_bytes(const ArchSpec& arch, const Workload& workload, const Variant& variant, int tp);

// Per GPU of `tp` ranks, for the workload's layers (whole_model_workload gives every layer).
MemoryFootprint memory_footprint(const ArchSpec& arch, const Workload& workload, const Variant& variant, int tp);
// The same with a training workload's saved activations given (training_saved_activations; ignored otherwise).
MemoryFootprint memory_footprint(const ArchSpec& arch, const Workload& workload, const Variant& variant, int tp,
                                 const SavedActivations& saved);
// What one micro-batch of a training workload saves for its backward (from its one-micro-batch step graph).
SavedActivations training_saved_activations(const ArchSpec& arch, const Workload& workload, const Variant& variant,
                                            int tp);

// FSDP under a pipeline: PyTorch's pipeline stages turn FSDP's gradient sync off for every micro-batch's backward but
// the last (torch/distributed/pipelining/stage.py, backward_maybe_with_nosync: set_requires_gradient_sync(False),
// set_reshard_after_backward(False)), so each parameter's gradient accumulates unsharded, cast to the reduce dtype
// where it differs from the bf16 parameters (FSDP2's FSDPParam.to_accumulated_grad_if_needed), until the last
// backward reduce-scatters it. The bytes of that gradient for the workload's layers on this rank (0 without FSDP); the
// schedule says when it is held (peak_held: never with one micro-batch, whose backward is the last).
double accumulated_unsharded_gradient_bytes(const ArchSpec& arch, const Workload& workload, int tp);

// The workload over every layer of the model (workload.layers may simulate a slice): what memory is counted for.
Workload whole_model_workload(const ArchSpec& arch, const Workload& workload);

}  // namespace tpsim::model
