// What a PyTorch job holds on a GPU beyond its tensors, and what the GPU can give it: the caching allocator's
// reserve over the tensors' peak, cuBLAS's workspaces (both inside PyTorch's max_memory_reserved),
// the CUDA context with its loaded kernels and library handles, and NCCL's buffers per communicator and per
// send/receive peer (outside it). Each part's parameter comes from the GPU preset's `runtime_memory:` block,
// which says where each comes from. Ignored: DeepEP's NVSHMEM buffers, torch.compile's workspaces, CUDA
// graph pools. Assumed: the reserve a training step's peak carries (fitted on one GPU's steps) holds for every
// workload, a KV cache excepted (allocated once, one block per layer).
#pragma once

#include <string>

#include "model/memory/memory_footprint.hpp"
#include "model/scenario.hpp"

namespace tpsim::sim {

struct RuntimeMemorySpec {
  bool given = false;                  // false: the GPU states none; only the tensors are counted
  double context_bytes = 0;            // the CUDA context, loaded kernels, library handles (outside the allocator)
  double allocator_reserve = 0;        // reserved over allocated less 1, at the tensors' peak
  double workspace_bytes = 0;          // cuBLAS and cuBLASLt workspaces of one GEMM stream
  double nccl_communicator_bytes = 0;  // one communicator's channel buffers (collectives)
  double nccl_peer_bytes = 0;          // one send/receive or all-to-all peer's buffers
  std::string source;
};

// The NCCL communicators one GPU of the job joins and the peers it sends to and receives from.
struct Communicators {
  int collectives = 0;  // one per mesh dimension with collectives: tp, dp (two under hybrid sharding), pp, ep
  int peers = 0;        // pipeline neighbours, and the expert group's other members under NCCL's all-to-all
};
// Of pipeline stage `stage` (0 without a pipeline).
Communicators communicators(const model::Scenario& scenario, int stage);

// Fills `memory`'s runtime parts in: the workspaces, the allocator's reserve over its tensors but the KV cache, the
// context and NCCL's buffers.
void add_runtime_memory(model::MemoryFootprint& memory, const RuntimeMemorySpec& spec, const Communicators& comms);

}  // namespace tpsim::sim
