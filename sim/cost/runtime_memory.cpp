// The runtime's memory beside the tensors: reading its parameters, counting communicators, adding the parts.
#include "sim/cost/runtime_memory.hpp"

namespace tpsim::sim {

RuntimeMemorySpec read_runtime_memory(const model::YamlReader& in, const YAML::Node& node) {
  const std::vector<std::string> keys = {"context_GB",           "allocator_reserve", "cublas_workspace_MiB",
                                         "nccl_communicator_GB", "nccl_peer_GB",      "source"};
  in.expect_map(node, "gpu.runtime_memory", keys);
  for (const std::string& key : keys) in.require(node, key, "gpu.runtime_memory");
  const auto number = [&](const char* key, double high) {
    return in.number_in(node[key], std::string("gpu.runtime_memory.") + key, 0, high);
  };
  RuntimeMemorySpec spec;
  spec.given = true;
  spec.context_bytes = number("context_GB", 64) * 1e9;
  spec.allocator_reserve = number("allocator_reserve", 4);
  spec.workspace_bytes = number("cublas_workspace_MiB", 4096) * 1024 * 1024;
  spec.nccl_communicator_bytes = number("nccl_communicator_GB", 64) * 1e9;
  spec.nccl_peer_bytes = number("nccl_peer_GB", 64) * 1e9;
  spec.source = in.string(node["source"], "gpu.runtime_memory.source");
  return spec;
}

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
