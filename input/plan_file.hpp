// A plan file (`tpsim plan`): the model, the hardware and GPU count, the workload a training job must run (a fixed
// global batch) or a serving deployment must answer (`phase: serve`: prompt and output lengths, latency targets;
// input/serving_plan.hpp), and the search space of layouts, every key of it with a default, so that a minimal plan is
// the model, the GPU, the GPU count and the workload. Read here with located errors; plan/ enumerates and ranks.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "base/input_error.hpp"
#include "input/serving_plan.hpp"
#include "model/scenario.hpp"

namespace tpsim::model {

// The layouts to try. An empty list is the default the search fills in for the model and hardware
// (plan/plan_space.hpp); a list given is tried as written.
struct PlanSpace {
  std::vector<int> tp, pp, ep, etp, micro_batch, virtual_stages, chunks;
  std::vector<int> cp;  // context parallelism: default 1 only (dense models, phase train; seq_len a multiple of 2 cp)
  std::vector<std::string> data_parallel;  // ddp | fsdp | hsdp (sharded inside a node, replicated across)
  std::vector<std::string> schedule;       // 1f1b | interleaved | zb-h1 | gpipe | zb-v
  std::vector<std::string> recompute;      // none | selective | full
  std::vector<std::string> tp_mode;        // sp | async | tp
  std::vector<std::string> dtype;          // bf16 | fp8 (fp8 with fp8_recipe)
  std::vector<std::string> dispatcher;     // MoE: nccl | deepep
  std::vector<bool> two_batch_overlap;     // MoE
  std::string fp8_recipe = "tensorwise";
  // Serving plans (workload.phase serve): sequences per TP group, and CUDA graphs on or off.
  std::vector<int> batch;
  std::vector<bool> cuda_graphs;
};

struct PlanSpec {
  std::string file;
  std::string name;  // name, or the file's stem
  // model, hardware.gpu and calibration as written, in YAML's one-line flow form, for the candidates' scenarios
  std::string model_yaml;        // a preset name, an inline mapping or {hf_config: path}
  std::string gpu_yaml;          // a preset name or an inline mapping
  std::string calibration_yaml;  // empty: not given (default)
  std::string topology;          // hardware.topology; empty: nvswitch within a node, ib-rail across nodes
  SourceLocation topology_at;    // hardware.topology, else hardware.gpu: where a topology error points
  std::vector<int> gpus;         // hardware.gpus: one count or a list (a range of job sizes)
  int64_t global_batch = 0;      // workload.global_batch: sequences per step over every replica
  int64_t seq_len = 0;
  PlanSpace space;
  // workload.phase serve: a serving deployment's requests and targets (plan/serving_space.hpp), and the serving
  // framework the candidates run as (the scenario's implementation key in YAML's one-line flow form; empty: the
  // idealised layer).
  bool serving = false;
  ServingWorkload serve;
  std::string implementation_yaml;
  std::string text;
  // A scenario of the plan's model, GPU and calibration (one GPU, tp 1), read from the plan's own nodes so that its
  // errors point into the plan: read with the plan, its error kept for probe_scenario to raise.
  std::optional<Scenario> probe;
  std::exception_ptr probe_error;
};

// Reads and checks a plan file; throws InputError naming file:line:col, what is wrong and what is valid.
PlanSpec load_plan(const std::string& path);
PlanSpec parse_plan(const std::string& text, const std::string& file);
// The plan's probe scenario (PlanSpec::probe); throws the error reading it gave, located in the plan.
const Scenario& probe_scenario(const PlanSpec& plan);
// The keys a plan's section accepts ("", "hardware", "workload", "search"; a serving plan's "serve.workload",
// "serve.search").
const std::vector<std::string>& plan_keys(const std::string& section);

}  // namespace tpsim::model
