// Writes a plan's candidate layouts as scenario YAML.
#include "input/scenario_writer.hpp"

#include <sstream>

namespace tpsim::model {
namespace {

void write_parallelism(std::ostringstream& y, const TrainingLayout& l) {
  y << "parallelism: {tp: " << l.tp << ", pp: " << l.pp << ", dp: " << l.dp;
  if (l.cp > 1) y << ", cp: " << l.cp;
  if (l.ep > 1) y << ", ep: " << l.ep;
  if (l.etp > 1) y << ", etp: " << l.etp;
  y << "}\n";
  if (l.data_parallel == "fsdp") y << "fsdp: {}\n";
  if (l.data_parallel == "hsdp") y << "fsdp: {shard_degree: " << l.shard_degree << "}\n";
  if (l.data_parallel == "ddp") y << "ddp: {}\n";
  // Megatron's distributed optimizer as its recipes run it: both overlaps on.
  if (l.data_parallel == "zero1")
    y << "distributed_optimizer: {overlap_grad_reduce: true, overlap_param_gather: true}\n";
  if (l.pp > 1) {
    y << "pipeline: {schedule: " << l.schedule << ", virtual_stages: " << l.virtual_stages;
    if (!l.chunk_layers.empty()) {
      y << ", chunk_layers: [";
      for (size_t i = 0; i < l.chunk_layers.size(); ++i) y << (i ? ", " : "") << l.chunk_layers[i];
      y << "]";
    }
    y << "}\n";
  }
}

// The heading, name, model, hardware and calibration lines every candidate's scenario starts with.
void write_head(std::ostringstream& y, const PlanSpec& plan, const std::string& heading, const std::string& name,
                const std::string& topology, int nodes) {
  y << "# " << heading << "\n";
  y << "name: " << name << "\n";
  y << "model: " << plan.model_yaml << "\n";
  y << "hardware: {gpu: " << plan.gpu_yaml << ", topology: " << topology << ", nodes: " << nodes << "}\n";
  y << "calibration: " << (plan.calibration_yaml.empty() ? std::string("default") : plan.calibration_yaml) << "\n";
}

}  // namespace

std::string write_training_scenario(const PlanSpec& plan, const TrainingLayout& l) {
  std::ostringstream y;
  write_head(y, plan, l.heading, l.name, l.topology, l.nodes);
  y << "workload: {phase: train, batch: " << l.micro_batch << ", seq_len: " << plan.seq_len << ", dtype: " << l.dtype;
  if (l.dtype == "fp8") y << ", fp8_recipe: " << plan.space.fp8_recipe;
  y << ", layers: all, global_batch: " << plan.global_batch << ", recompute: " << l.recompute << "}\n";
  write_parallelism(y, l);
  if (l.dispatcher != "nccl") y << "moe: {dispatcher: " << l.dispatcher << "}\n";
  y << "variants:\n  - {name: " << l.tp_mode << ", tp_mode: " << l.tp_mode;
  if (l.tp_mode == "async") y << ", chunks: " << l.chunks << ", transport: copy_engine";
  if (l.two_batch_overlap) y << ", two_batch_overlap: true";
  y << "}\n";
  return y.str();
}

std::string write_generate_scenario(const PlanSpec& plan, const GenerateLayout& l) {
  std::ostringstream y;
  write_head(y, plan, l.heading, l.name, l.topology, l.nodes);
  if (!plan.implementation_yaml.empty()) y << "implementation: " << plan.implementation_yaml << "\n";
  y << "workload: {phase: generate, batch: " << l.batch << ", context_len: " << plan.serve.context_len
    << ", gen_len: " << plan.serve.gen_len << ", dtype: " << l.dtype
    << ", layers: all, cuda_graphs: " << (l.cuda_graphs ? "true" : "false") << "}\n";
  y << "parallelism: {tp: " << l.tp;
  if (l.ep > 1) y << ", ep: " << l.ep;
  y << "}\n";
  if (l.dispatcher != "nccl") y << "moe: {dispatcher: " << l.dispatcher << "}\n";
  y << "variants:\n  - {name: " << l.tp_mode << ", tp_mode: " << l.tp_mode;
  if (l.two_batch_overlap) y << ", two_batch_overlap: true";
  y << "}\n";
  return y.str();
}

}  // namespace tpsim::model
