// The runtime's memory beside the tensors: counting communicators, adding the parts (its parameters are read by
// input/gpu_reader.cpp).
#include "sim/cost/runtime_memory.hpp"

namespace tpsim::sim {

Communicators communicators(const model::Scenario& s, int stage) {
  const model::Parallelism& p = s.parallelism;
  const model::Workload& w = s.workload;
  Communicators c;
  if (p.tp > 1) ++c.collectives;
  if (w.data_parallel.enabled()) c.collectives += w.data_parallel.hybrid() ? 2 : 1;
  if (p.pp > 1) {
    ++c.collectives;  // the stages' gradient norms summed
    // A middle stage sends to and receives from two neighbours; the first and last one each, unless interleaved
    // chunks wrap around from the last stage to the first.
    const bool end = stage == 0 || stage == p.pp - 1;
    c.peers += p.pp > 2 && (!end || s.pipeline.virtual_stages > 1) ? 2 : 1;
  }
  if (p.ep > 1) {
    ++c.collectives;
    if (w.expert_parallel.dispatcher == model::Dispatcher::kNccl) c.peers += p.ep - 1;
  }
  return c;
}

void add_runtime_memory(model::MemoryFootprint& m, const RuntimeMemorySpec& spec, const Communicators& comms) {
  if (!spec.given) return;
  m.workspace_bytes = spec.workspace_bytes;
  m.allocator_reserve_bytes = spec.allocator_reserve * (m.tensor_bytes() - m.kv_cache_bytes);
  m.context_bytes = spec.context_bytes;
  m.nccl_bytes = comms.collectives * spec.nccl_communicator_bytes + comms.peers * spec.nccl_peer_bytes;
}

}  // namespace tpsim::sim
