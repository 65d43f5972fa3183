// Writes a scenario as the YAML `tpsim run` reads: a plan's candidate layouts (plan/plan_space.hpp, training, and
// plan/serving_space.hpp, serving), with the plan's model, GPU, calibration and implementation as it wrote them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "input/plan_file.hpp"

namespace tpsim::model {

// One training layout of a plan, in the scenario's terms (each value as the scenario file writes it).
struct TrainingLayout {
  std::string heading;  // the comment line's text
  std::string name;
  std::string topology;
  int nodes = 1;
  int micro_batch = 1;
  std::string dtype = "bf16";
  std::string recompute = "none";
  int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, etp = 1;
  std::string data_parallel = "none";  // none | ddp | fsdp | hsdp | zero1
  int shard_degree = 0;                // hsdp
  std::string schedule = "none";       // pp > 1
  int virtual_stages = 1;
  std::vector<int64_t> chunk_layers;  // empty: the layers split evenly
  std::string dispatcher = "nccl";
  std::string tp_mode = "sp";
  int chunks = 1;  // tp_mode async
  bool two_batch_overlap = false;
};

// The scenario file of `layout` under `plan`.
std::string write_training_scenario(const PlanSpec& plan, const TrainingLayout& layout);

// One serving layout of a plan: a generate scenario of one serving unit (each value as the scenario file writes it).
struct GenerateLayout {
  std::string heading;  // the comment line's text
  std::string name;
  std::string topology;
  int nodes = 1;
  int batch = 1;  // sequences per TP group
  std::string dtype = "bf16";
  bool cuda_graphs = true;
  int tp = 1, ep = 1;
  std::string dispatcher = "nccl";
  std::string tp_mode = "tp";
  bool two_batch_overlap = false;
};

// The generate scenario file of `layout` under the serving plan `plan` (its context and output lengths).
std::string write_generate_scenario(const PlanSpec& plan, const GenerateLayout& layout);

}  // namespace tpsim::model
