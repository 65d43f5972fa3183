// The candidate layouts of a plan: every combination of the search space's axes (the defaults filled in for the
// model and hardware), each written as the scenario YAML `tpsim run` reads, so that a candidate is an ordinary
// scenario and `tpsim plan --explain N` prints exactly what was simulated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "input/plan_file.hpp"
#include "model/layers/arch_spec.hpp"

namespace tpsim::plan {

// 1, 2, 4, ... up to `limit`: the default values of a search axis.
std::vector<int> powers_of_two_up_to(int limit);
// A search axis as the plan gave it, or its default where the plan left it out.
template <typename T>
std::vector<T> or_default(const std::vector<T>& given, std::vector<T> fallback) {
  return given.empty() ? fallback : given;
}

struct Layout {
  int gpus = 1, nodes = 1, tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, etp = 1;
  int micro_batch = 1, virtual_stages = 1, chunks = 1;
  int shard_degree = 0;                // hsdp: replicas each parameter is sharded over
  std::string data_parallel = "none";  // none (dp 1) | ddp | fsdp | hsdp
  std::string schedule = "none";       // pp 1: none
  std::string recompute = "none";
  std::string tp_mode = "sp";
  std::string dtype = "bf16";
  std::string dispatcher = "nccl";  // MoE only
  bool two_batch_overlap = false;   // MoE only
  // pp > 1 with layers that do not split evenly over the chunks: each chunk's layers, the first and last chunk (which
  // hold the embedding and the LM head) one fewer than the others (Llama 3 405B's 126 layers over 16 stages).
  std::vector<int64_t> chunk_layers;
  // Sorts layouts that share simulated programs next to each other (the cache keeps recent ones).
  std::string program_key() const;
};

// "tp8 pp2 dp4 fsdp mb1 1f1b selective sp": the layout in one line.
std::string describe(const Layout& layout);

struct Candidate {
  size_t index = 0;  // in enumeration order: what --explain N names
  Layout layout;
};

// The hardware facts the defaults need: GPUs per node of the plan's topology.
struct PlanHardware {
  std::string topology;  // resolved: the plan's, or nvswitch for one node, ib-rail across nodes
  int gpus_per_node = 8;
};

// Every candidate, in a fixed order (GPU count, tp, pp, virtual stages, dp, ...), the defaults filled in.
std::vector<Candidate> enumerate_candidates(const model::PlanSpec& plan, const model::ArchSpec& arch,
                                            int gpus_per_node);
// The topology a plan of `gpus` GPUs runs on.
std::string plan_topology(const model::PlanSpec& plan, int gpus, int gpus_per_node);
// The scenario file of a candidate (model, hardware and calibration as the plan wrote them).
std::string scenario_text(const model::PlanSpec& plan, const Candidate& candidate, int gpus_per_node);

}  // namespace tpsim::plan
