// Runs every variant of a scenario: resolves hardware and profile, builds graphs, simulates, summarises.
// A generate workload simulates its prefill (which yields the first token) and three of its
// gen_len - 1 decode steps (first, middle, last context length), and sums the decode steps exactly
// for a quadratic in the step index; tests measure the error of that shortcut against every step.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/graph/layer_graph.hpp"
#include "model/memory/memory_footprint.hpp"
#include "model/scenario.hpp"
#include "sim/cost/cost_model.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/pass_trace.hpp"
#include "sim/engine/timeline.hpp"
#include "sim/report/metrics.hpp"
#include "sim/run/pipeline_run.hpp"

namespace tpsim::sim {

struct VariantRun {
  model::Variant variant;
  std::vector<PassTrace> passes;  // the simulated passes shown in traces
  Metrics metrics;                // of the whole workload (a generate sums prefill and decode steps)
  double speedup = 1.0;           // baseline time / this time
  double tokens_per_s = 0;        // processed (forward, prefill) or generated (decode, generate) tokens / time,
                                  // by the whole TP group
  double mfu = 0;                 // model FLOPs per GPU (GEMMs, attention) / (time x the bf16 dense peak)
  std::optional<double> ttft_s;   // prefill, generate: time to first token
  std::optional<double> tpot_s;   // decode, generate: mean time per output token (one decode step)
  int64_t passes_simulated = 0;
  // Under the scenario's skew (model/parallel/rank_skew.hpp), when it has one: the same workload's time.
  std::optional<double> skewed_time_s;
  // An MoE model under skewed routing (or drops): the same workload's time under balanced dropless routing.
  std::optional<double> balanced_routing_time_s;
  // Per GPU: weights, KV cache, activations, buffers (model workloads; op lists have none); of the stage that
  // needs the most under a pipeline.
  std::optional<model::MemoryFootprint> memory;
  std::optional<PipelineRun> pipeline;  // parallelism.pp > 1: the stages, the schedule, the sends
  int data_replicas = 1;                // parallelism.dp
};

// Whether the variant ran a job of more than one TP group (pipeline stages or data-parallel replicas).
inline bool is_job(const VariantRun& v) {
  return v.pipeline.has_value() || v.data_replicas > 1;
}

// GPUs one model replica runs on: the TP group, times the pipeline stages.
int replica_gpus(const VariantRun& variant);

// A job's exposed communication per dimension of the mesh, in seconds of its step.
struct ExposedByDimension {
  double tp_s = 0;  // the TP group's: what exposed_comm_s counts beyond the data and expert groups'
  double pp_s = 0;  // the sends between stages: what they add to the step (PipelineRun::send_exposed_s)
  double dp_s = 0;  // the data group's (Metrics::exposed_data_comm_s) less the CP exchanges'
  double cp_s = 0;  // the CP group's K/V exchanges (Metrics::exposed_context_comm_s); idle under both counts here
  double ep_s = 0;  // the expert-parallel group's all-to-alls (Metrics::exposed_expert_comm_s)
};
ExposedByDimension exposed_by_dimension(const VariantRun& variant);

// How a job's data group is simulated: one member, its collectives in closed form (the default), or every
// member, its collectives step by step between them (`--no-symmetry`, for checking the first).
enum class Symmetry { kOneMember, kEveryMember };

struct ScenarioRun {
  model::Scenario scenario;
  Symmetry symmetry = Symmetry::kOneMember;
  GpuSpec gpu;
  Fabric fabric;
  CostProfile profile;
  std::vector<VariantRun> variants;
};

// Checks what the graph builder cannot see (topology, node count, GPUs per domain) and returns the
// fabric; throws InputError located at hardware.topology.
Fabric check_hardware(const model::Scenario& scenario, const GpuSpec& gpu);

// Called before each variant is simulated (its index among the scenario's variants): progress reports.
using VariantStarted = std::function<void(const model::Variant&, size_t)>;

// What a scenario's runs are built on, before any is simulated: its GPU (under its power limit), the job's fabric and
// the profile (with its attention kernel), in a run without variants (located errors as run_scenario's).
ScenarioRun prepare_run(const model::Scenario& scenario, const CostProfile* profile = nullptr,
                        Symmetry symmetry = Symmetry::kOneMember);
// The cost model of the run's TP group, on the nodes it spans (what the engine simulates).
CostModel group_cost_model(const ScenarioRun& run);

// `profile`, when given, replaces the one the scenario's calibration names (calibrate's fits simulate
// scenarios with the profile they are fitting). Symmetry::kEveryMember simulates every data-parallel replica of
// the TP group (of each pipeline chunk's program under pp > 1, the stages still timed by their schedule).
ScenarioRun run_scenario(const model::Scenario& scenario, const VariantStarted& started = {},
                         const CostProfile* profile = nullptr, Symmetry symmetry = Symmetry::kOneMember);

// Whether the variant's memory fits the GPU's HBM; nullopt where either is unknown (an op list, or a GPU
// without hbm_GB).
std::optional<bool> fits_memory(const VariantRun& variant, const GpuSpec& gpu);

// Throws InputError naming the first variant whose memory does not fit the GPU (or cannot be told to):
// what `--require-fit` asks for.
void require_memory_fit(const ScenarioRun& run);

// The chunk counts `chunks: auto` tries for the scenario's primary pass, smallest first.
std::vector<int> chunk_candidates(const model::Scenario& scenario);

// Sum of the metrics of decode steps 0..gen_len-2 of a generate workload (the prefill makes the first token): exact
// simulation of every step when `every_step`, else the three-point quadratic shortcut. Exposed for tests.
Metrics decode_total(const model::Scenario& scenario, const model::Variant& variant, const CostModel& cost,
                     const EngineOptions& options, bool every_step, std::vector<PassTrace>* traces = nullptr);

}  // namespace tpsim::sim
