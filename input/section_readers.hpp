// The readers of the scenario sections that configure a parallel job (fsdp, ddp, moe and expert parallelism,
// pipeline, skew, parallelism.order) into the model's values, and the keys each section accepts.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "input/yaml_reader.hpp"
#include "model/moe/expert_parallel.hpp"
#include "model/parallel/mesh_order.hpp"
#include "model/parallel/rank_skew.hpp"
#include "model/pipeline/pipeline_spec.hpp"
#include "model/scenario.hpp"
#include "model/train/ddp_fsdp.hpp"

namespace tpsim::model {

// The keys of the fsdp, ddp and distributed_optimizer sections.
const std::vector<std::string>& fsdp_keys();

const std::vector<std::string>& ddp_keys();

const std::vector<std::string>& distributed_optimizer_keys();

// Reads the `fsdp:`, `ddp:` and `distributed_optimizer:` sections for parallelism.dp = `degree` replicas of
// `workload`, refusing at its key what cannot run: any section with dp 1, two at once, data parallelism outside
// phase train, a shard_degree that does not divide dp. Each section may be undefined.
DataParallel read_data_parallel(const YamlReader& in, const YAML::Node& fsdp, const YAML::Node& ddp,
                                const YAML::Node& distributed_optimizer, const YAML::Node& dp_key, int degree,
                                const Workload& workload);

// The keys of a moe section (sweeps check their axes against them).
const std::vector<std::string>& moe_routing_keys();

// moe: {routing: balanced | zipf | from_file, zipf_s, file, drop, capacity_factor, seed, dispatcher, deepep_mode}, each
// refused at its key when it does not apply (zipf_s without zipf, file without from_file, capacity_factor without drop:
// true). A from_file routing's file is read by the caller, which knows the layers.
void read_moe_routing(const YamlReader& in, const YAML::Node& node, ExpertParallel& out);

// The keys of the pipeline section.
const std::vector<std::string>& pipeline_keys();

// Reads `pipeline:` for `stages` pipeline stages over `workload`'s micro-batches and layers, refusing at
// its key (or at parallelism.pp) what cannot run: a pipeline outside phase train, layers that do not split
// evenly into stages x virtual_stages chunks (or chunk_layers that do not add up to them), counts the
// schedule cannot run. `node` may be undefined (the defaults: 1f1b, one chunk per stage, an even split).
PipelineSpec read_pipeline(const YamlReader& in, const YAML::Node& node, const YAML::Node& pp_key, int stages,
                           const Workload& workload);

// The keys of a skew section (sweeps check their axes against them).
const std::vector<std::string>& rank_skew_keys();

// skew: {kernel_cv, gpu_cv, seed}; each CV from 0 to 0.5, the seed an integer from 0 to 2^53.
RankSkew read_rank_skew(const YamlReader& in, const YAML::Node& node);

// Reads parallelism.order, a list naming tp, pp and dp once each with tp first; refuses anything else at
// `node`, saying which orders are valid.
MeshOrder read_mesh_order(const YamlReader& in, const YAML::Node& node);

// After the model, parallelism, workload, data parallelism and variants are read: sets
// out.workload.expert_parallel from parallelism.ep and root's moe section, refusing ep or moe without an MoE
// model, ep not a multiple of tp, not dividing the experts, or (train) not dividing tp x dp; and with an MoE
// model: pipelines under ep > 1, FSDP, fp8, and variants holding every token on every rank (tp, dtp) under
// tp > 1.
void read_expert_parallel(const YamlReader& in, const YAML::Node& root, Scenario& out);

}  // namespace tpsim::model
