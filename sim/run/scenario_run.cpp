// Scenario orchestration: isolated simulations per variant and pass, generate integration, speedups.
#include "sim/run/scenario_run.hpp"

#include <algorithm>

#include "base/input_error.hpp"
#include "base/units.hpp"
#include "input/gpu_reader.hpp"
#include "input/profile/profile_reader.hpp"
#include "model/graph/graph_builder.hpp"
#include "model/memory/memory_footprint.hpp"
#include "model/moe/moe_scenario.hpp"
#include "sim/cost/power_limit.hpp"
#include "sim/cost/runtime_memory.hpp"
#include "sim/engine/isolated_run.hpp"
#include "sim/run/variant_error.hpp"

namespace tpsim::sim {
namespace {

struct SimulatedPass {
  Metrics metrics;
  PassTrace trace;
};

SimulatedPass simulate_pass(const model::Scenario& s, const model::Variant& v, const model::Pass& pass,
                            const CostModel& cost, const EngineOptions& options, std::string label) {
  model::LayerGraph graph = model::build_pass_graph(s.arch, s.workload, pass, s.parallelism.tp, v);
  Timeline timeline = simulate(graph, cost, options);
  const Metrics metrics = compute_metrics(graph, timeline);
  return SimulatedPass{metrics, PassTrace{std::move(label), std::move(graph), std::move(timeline)}};
}

// A pipeline-parallel step: its stages' programs and the schedule (sim/run/pipeline_run.hpp).
VariantRun run_pipelined_variant(const model::Scenario& scenario, const model::Variant& variant, const CostModel& cost,
                                 const EngineOptions& options, const Fabric& job) {
  PipelineVariantRun step = run_pipeline(scenario, variant, cost, options, job);
  VariantRun v;
  v.variant = variant;
  v.metrics = step.metrics;
  v.passes = std::move(step.passes);
  v.passes_simulated = static_cast<int64_t>(v.passes.size());
  const model::Workload& w = scenario.workload;
  v.tokens_per_s = static_cast<double>(model::primary_pass(w).tokens() * w.microbatches) / v.metrics.time_s;
  v.pipeline = std::move(step.pipeline);
  return v;
}

VariantRun run_variant(const model::Scenario& scenario, const model::Variant& variant, const CostModel& cost,
                       const EngineOptions& options, const Fabric& job) {
  if (scenario.parallelism.pp > 1) return run_pipelined_variant(scenario, variant, cost, options, job);
  const model::Workload& w = scenario.workload;
  VariantRun v;
  v.variant = variant;
  const model::Pass primary = model::primary_pass(w);
  SimulatedPass first = simulate_pass(scenario, variant, primary, cost, options,
                                      w.phase == model::Phase::kGenerate ? "prefill" : model::to_string(w.phase));
  v.metrics = first.metrics;
  v.passes.push_back(std::move(first.trace));
  v.passes_simulated = 1;
  switch (w.phase) {
    case model::Phase::kOps:
      break;
    case model::Phase::kForward:
      v.tokens_per_s = static_cast<double>(primary.tokens()) / v.metrics.time_s;
      break;
    case model::Phase::kTrain:
      v.tokens_per_s = static_cast<double>(primary.tokens() * w.microbatches) / v.metrics.time_s;
      break;
    case model::Phase::kPrefill:
      v.ttft_s = v.metrics.time_s;
      v.tokens_per_s = static_cast<double>(primary.tokens()) / v.metrics.time_s;
      break;
    case model::Phase::kDecode:
      // The serving framework's host time between steps, where its GPU step does not hide it.
      v.tpot_s = v.metrics.time_s + model::serving_host_seconds(w.implementation, v.metrics.time_s);
      v.tokens_per_s = static_cast<double>(w.batch) / *v.tpot_s;
      break;
    case model::Phase::kGenerate: {
      v.ttft_s = v.metrics.time_s;
      const int64_t steps = w.gen_len - 1;
      const Metrics decode = decode_total(scenario, variant, cost, options, false, &v.passes);
      v.passes_simulated += std::min<int64_t>(steps, 3);
      double host_s = 0;
      if (steps > 0) {
        const double step_s = decode.time_s / static_cast<double>(steps);
        const double step_host_s = model::serving_host_seconds(w.implementation, step_s);
        v.tpot_s = step_s + step_host_s;
        host_s = step_host_s * static_cast<double>(steps);
      }
      v.metrics = weighted_sum(v.metrics, 1.0, decode, 1.0);
      v.metrics.time_s += host_s;  // the serving loop's host time between the steps, where not hidden
      v.tokens_per_s = static_cast<double>(w.batch * w.gen_len) / v.metrics.time_s;
      break;
    }
  }
  return v;
}

VariantRun run_fastest_chunks(const model::Scenario& scenario, const model::Variant& variant, const CostModel& cost,
                              const EngineOptions& options, const Fabric& job) {
  std::optional<VariantRun> best;
  for (int chunks : chunk_candidates(scenario)) {
    model::Variant candidate = variant;
    candidate.chunks = chunks;
    candidate.chunks_auto = false;
    VariantRun run = run_variant(scenario, candidate, cost, options, job);
    if (!best || run.metrics.time_s < best->metrics.time_s) best = std::move(run);
  }
  if (!best) {
    throw InputError("variant " + variant.name + ": chunks: auto found no chunk count that divides the " +
                     std::to_string(model::primary_pass(scenario.workload).tokens()) +
                     " tokens over tp=" + std::to_string(scenario.parallelism.tp));
  }
  best->variant.chunks_auto = true;  // reports say the count was chosen
  return std::move(*best);
}

}  // namespace

std::vector<int> chunk_candidates(const model::Scenario& scenario) {
  const int tp = scenario.parallelism.tp;
  const int64_t tokens = model::primary_pass(scenario.workload).tokens();
  std::vector<int> candidates;
  // Beyond 4 pieces per shard a chunk's GEMM is a few waves at most and every step pays its latency:
  // the search stops there.
  constexpr int kMaxPiecesPerShard = 4;
  for (int chunks = 1; chunks <= kMaxPiecesPerShard * tp; ++chunks) {
    if (!model::check_chunks(chunks, tp).empty()) continue;
    const int units = chunks > tp ? chunks : tp;
    if (tokens % units == 0) candidates.push_back(chunks);
  }
  return candidates;
}

namespace {

// hardware.power_limit_W over the preset's default limit, checked against the board's power.
void apply_power_limit(const model::Scenario& s, GpuSpec& gpu) {
  if (s.power_limit_W <= 0) return;
  const SourceLocation& key = s.keys.power_limit;
  const std::string limit = model::format_number("%g", s.power_limit_W) + " W";
  if (gpu.board_power_W <= 0) {
    fail_at(key, "hardware.power_limit_W " + limit + ": GPU " + gpu.name +
                     " gives no board power (board_power_W) to set a limit below");
  }
  if (s.power_limit_W > gpu.board_power_W) {
    fail_at(key, "hardware.power_limit_W " + limit + " is above " + gpu.name + "'s board power of " +
                     model::format_number("%g", gpu.board_power_W) + " W; valid: up to it");
  }
  gpu.power_limit_W = s.power_limit_W;
}

// Where entry `i` of a list (workload.ops, variants) forces its protocol: the key, else the entry, else `fallback`.
template <typename Keys>
SourceLocation protocol_key(const std::vector<Keys>& entries, size_t i, const SourceLocation& fallback) {
  if (i >= entries.size()) return fallback;
  return entries[i].protocol.value_or(entries[i].entry);
}

// That the profile can say what the limit does to compute-bound kernels.
void check_power_limit(const model::Scenario& s, const ScenarioRun& run) {
  const std::string why = power_limit_unsupported_reason(run.gpu, run.profile);
  if (why.empty()) return;
  const SourceLocation& key = s.power_limit_W > 0 ? s.keys.power_limit : s.gpu.at;
  fail_at(key, (s.power_limit_W > 0 ? "hardware.power_limit_W: " : "hardware.gpu " + run.gpu.name + ": ") + why);
}

// The implementation's attention kernel's rates, refused at its key where the profile has none.
void apply_attention_kernel(const model::Scenario& s, CostProfile& profile) {
  const model::AttentionKernel kernel = s.workload.implementation.attention;
  if (kernel == model::AttentionKernel::kProfile) return;
  if (const std::string why = select_attention_kernel(profile, model::to_string(kernel)); !why.empty()) {
    fail_at(s.keys.attention_kernel, "implementation.attention " + model::to_string(kernel) + ": " + why);
  }
}

// Each variant's memory per GPU, for the whole model, with the runtime's parts for the GPU; under a pipeline each
// stage's, the variant's the stage that needs the most (the one that must fit).
void count_memory(const model::Scenario& scenario, const GpuSpec& gpu, VariantRun& v) {
  if (v.pipeline) {
    for (size_t i = 0; i < v.pipeline->stages.size(); ++i) {
      model::MemoryFootprint& stage = v.pipeline->stages[i].memory;
      add_runtime_memory(stage, gpu.runtime_memory, communicators(scenario, static_cast<int>(i)));
      if (!v.memory || stage.device_bytes() > v.memory->device_bytes()) v.memory = stage;
    }
    return;
  }
  v.memory = model::memory_footprint(scenario.arch, model::whole_model_workload(scenario.arch, scenario.workload),
                                     v.variant, scenario.parallelism.tp);
  add_runtime_memory(*v.memory, gpu.runtime_memory, communicators(scenario, 0));
}

}  // namespace

Fabric check_hardware(const model::Scenario& s, const GpuSpec& gpu) {
  Fabric fabric;
  try {
    fabric = resolve_fabric(FabricRequest{s.topology.value, s.nodes, s.nic_GBps * 1e9, s.oversubscription}, gpu);
  } catch (const InputError& error) {
    fail_at(s.topology.at, std::string("hardware.topology: ") + error.what());
  }
  const int tp = s.parallelism.tp, pp = s.parallelism.pp;
  // An expert-parallel group wider than the TP group spans replicas of it (inference runs ep / tp of them).
  const int dp = std::max(s.parallelism.dp, s.parallelism.ep / tp);
  const int cp = s.parallelism.cp;
  const bool job = pp > 1 || dp > 1 || cp > 1;
  if (job) {
    if (const std::string why = job_placement_problem(fabric, tp, pp, dp, gpu.name, cp); !why.empty()) {
      fail_at(s.topology.at, "parallelism " + why);
    }
  }
  if (const std::string why = group_placement_problem(group_fabric(fabric, job ? tp : fabric.max_gpus), tp, gpu.name);
      !why.empty()) {
    fail_at(s.topology.at, "parallelism.tp=" + std::to_string(tp) + " " + why);
  }
  return fabric;
}

// That the profile has what the scenario asks for (a network section across nodes, fp8 rates, the
// forced protocols' regimes), each refused at its key. Checked here, where the error can name the file
// and line; the plans would raise it inside the simulation process, which reports it without one.
void check_profile_covers(const model::Scenario& scenario, const ScenarioRun& run, const CostModel& cost) {
  if (scenario.arch.moe.enabled()) {
    if (const std::string why = cost.grouped_gemm_unsupported_reason(); !why.empty()) {
      fail_at(scenario.calibration.at, "calibration: model " + scenario.arch.name + " is MoE, but " + why);
    }
  }
  if (const model::ExpertParallel& ep = scenario.workload.expert_parallel;
      ep.dispatcher == model::Dispatcher::kDeepEp) {
    const SourceLocation& at = scenario.keys.dispatcher;
    if (!run.profile.deepep) {
      fail_at(at, "moe.dispatcher deepep: profile " + run.profile.name +
                      " has no deepep section (DeepEP's rates); add it or base the profile on a preset");
    }
    // Decode passes run the low-latency kernels unless deepep_mode says normal; every inference pass when it says
    // low_latency.
    const model::Phase phase = scenario.workload.phase;
    const bool decodes = phase == model::Phase::kDecode || phase == model::Phase::kGenerate;
    const bool low_latency =
        scenario.workload.is_inference() &&
        (ep.deepep_mode == model::DeepEpMode::kLowLatency || (ep.deepep_mode == model::DeepEpMode::kAuto && decodes));
    if (low_latency && !run.profile.deepep->low_latency) {
      fail_at(at, "moe.dispatcher deepep: profile " + run.profile.name +
                      " has no deepep.low_latency section (the rates of DeepEP's low-latency kernels, which decode "
                      "runs); add it, base the profile on a preset, or set moe.deepep_mode: normal");
    }
  }
  if (scenario.arch.linear.enabled()) {
    if (const std::string why = cost.linear_attention_unsupported_reason(); !why.empty()) {
      fail_at(scenario.calibration.at,
              "calibration: model " + scenario.arch.name + " has linear-attention layers, but " + why);
    }
  }
  const model::Parallelism& par = scenario.parallelism;
  const int replicas = std::max(par.replicas(), par.ep / par.tp);
  if (run.fabric.spans_nodes(par.tp * par.pp * replicas) && !run.profile.network && !run.fabric.spans_nodes(par.tp)) {
    const std::string what = par.pp > 1   ? "the " + std::to_string(par.pp) + " pipeline stages"
                             : par.cp > 1 ? "the " + std::to_string(par.replicas()) + " data-parallel and CP members"
                             : par.dp > 1 ? "the " + std::to_string(par.dp) + " data-parallel replicas"
                                          : "the expert-parallel group of " + std::to_string(par.ep) + " GPUs";
    fail_at(scenario.calibration.at,
            "calibration: profile " + run.profile.name + " has no network section, and " + what + " span " +
                run.fabric.name + " nodes; fit one with `tpsim calibrate` on multi-node all-reduce measurements");
  }
  if (run.fabric.spans_nodes(scenario.parallelism.tp) && !run.profile.network) {
    fail_at(scenario.calibration.at,
            "calibration: profile " + run.profile.name +
                " has no network section, and tp=" + std::to_string(scenario.parallelism.tp) + " spans " +
                run.fabric.name + " nodes; fit one with `tpsim calibrate` on multi-node all-reduce measurements");
  }
  const model::Workload& w = scenario.workload;
  if (w.dtype == model::Dtype::kFp8) {
    if (const std::string why = cost.fp8_unsupported_reason(); !why.empty()) {
      fail_at(scenario.keys.dtype, "workload.dtype fp8: " + why);
    }
  }
  if (w.attention_dtype == model::Dtype::kFp8) {
    if (const std::string why = cost.fp8_attention_unsupported_reason(); !why.empty()) {
      fail_at(scenario.keys.attention_dtype, "workload.attention_dtype fp8: " + why);
    }
  }
  if (w.fp8_recipe == model::Fp8Recipe::kMxfp8 && run.gpu.compute_capability < 100) {
    fail_at(scenario.keys.fp8_recipe,
            "workload.fp8_recipe mxfp8 needs block-scaled fp8 tensor cores (compute capability 10.0, Blackwell); " +
                run.gpu.name + " has " +
                (run.gpu.compute_capability > 0 ? std::to_string(run.gpu.compute_capability / 10) + "." +
                                                      std::to_string(run.gpu.compute_capability % 10)
                                                : std::string("none given")) +
                "; use tensorwise, rowwise or blockwise, or a b200");
  }
  if (w.phase == model::Phase::kTrain) {
    if (const std::string why = cost.attention_backward_unsupported_reason(); !why.empty()) {
      fail_at(scenario.calibration.at, "calibration: " + why);
    }
  }
  // A forced protocol is written at its key (variants may be implicit: they force none).
  for (size_t i = 0; i < w.ops.size(); ++i) {
    if (const std::string why = protocol_unavailable_reason(run.profile, w.ops[i].protocol); !why.empty()) {
      fail_at(protocol_key(scenario.keys.ops, i, scenario.keys.document), why);
    }
  }
  for (size_t i = 0; i < scenario.variants.size(); ++i) {
    if (const std::string why = protocol_unavailable_reason(run.profile, scenario.variants[i].protocol); !why.empty()) {
      fail_at(protocol_key(scenario.keys.variants, i, scenario.keys.document), why);
    }
  }
}

Metrics decode_total(const model::Scenario& s, const model::Variant& v, const CostModel& cost,
                     const EngineOptions& options, bool every_step, std::vector<PassTrace>* traces) {
  // The prefill produces the first new token; each decode step one more.
  const int64_t steps = s.workload.gen_len - 1;
  auto step_metrics = [&](int64_t step) {
    SimulatedPass pass =
        simulate_pass(s, v, model::decode_pass(s.workload, step), cost, options, "decode step " + std::to_string(step));
    if (traces && step == 0) traces->push_back(std::move(pass.trace));
    return pass.metrics;
  };
  if (every_step || steps <= 3) {
    Metrics total;
    for (int64_t i = 0; i < steps; ++i) total = weighted_sum(total, 1.0, step_metrics(i), 1.0);
    return total;
  }
  // Each metric is a quadratic f(i) = a + b i + c i^2 through steps 0, mid and last (exact when the
  // step cost is affine or quadratic in the context length), summed exactly over i = 0..steps-1.
  const double x1 = static_cast<double>((steps - 1) / 2), x2 = static_cast<double>(steps - 1);
  const Metrics f0 = step_metrics(0), f1 = step_metrics((steps - 1) / 2), f2 = step_metrics(steps - 1);
  const double g = static_cast<double>(steps);
  const double s1 = g * (g - 1) / 2, s2 = (g - 1) * g * (2 * g - 1) / 6;
  // Lagrange basis weights: sum_i L_k(i) for the three nodes 0, x1, x2.
  const double w0 = (g * x1 * x2 - (x1 + x2) * s1 + s2) / (x1 * x2);
  const double w1 = (s2 - x2 * s1) / (x1 * (x1 - x2));
  const double w2 = (s2 - x1 * s1) / (x2 * (x2 - x1));
  return weighted_sum(weighted_sum(f0, w0, f1, w1), 1.0, f2, w2);
}

int replica_gpus(const VariantRun& v) {
  return v.passes.front().graph.tp() * (v.pipeline ? static_cast<int>(v.pipeline->stages.size()) : 1);
}

ExposedByDimension exposed_by_dimension(const VariantRun& v) {
  ExposedByDimension e;
  e.cp_s = v.metrics.exposed_context_comm_s;
  e.dp_s = std::max(0.0, v.metrics.exposed_data_comm_s - e.cp_s);
  e.ep_s = v.metrics.exposed_expert_comm_s;
  // Time the compute idles while several groups' collectives are in flight counts once: the data group's first,
  // then the expert group's.
  e.tp_s = std::max(0.0, v.metrics.exposed_comm_s - e.dp_s - e.cp_s - e.ep_s);
  if (v.pipeline) e.pp_s = v.pipeline->send_exposed_s;
  return e;
}

std::optional<bool> fits_memory(const VariantRun& variant, const GpuSpec& gpu) {
  if (!variant.memory || usable_hbm_bytes(gpu) <= 0) return std::nullopt;
  return variant.memory->device_bytes() <= usable_hbm_bytes(gpu);
}

void require_memory_fit(const ScenarioRun& run) {
  for (const VariantRun& v : run.variants) {
    const std::optional<bool> fits = fits_memory(v, run.gpu);
    if (fits.value_or(true)) {
      if (v.memory && !fits) {
        throw InputError(run.scenario.file + ": --require-fit: GPU " + run.gpu.name +
                         " gives no hbm_GB, so whether the variants fit cannot be told");
      }
      continue;
    }
    throw InputError(run.scenario.file + ": --require-fit: variant " + v.variant.name + " needs " +
                     model::format_number("%.1f", v.memory->device_bytes() / kGiB) + " GiB per GPU for all " +
                     std::to_string(run.scenario.arch.layers) + " layers, above the " +
                     model::format_number("%.2f", usable_hbm_bytes(run.gpu) / kGiB) + " GiB " + run.gpu.name +
                     " gives (tpsim run --memory shows the parts)");
  }
}

ScenarioRun prepare_run(const model::Scenario& input, const CostProfile* profile, Symmetry symmetry) {
  ScenarioRun run;
  model::Scenario scenario = input;  // with the expert-parallel group's node size, once the fabric is known
  run.symmetry = symmetry;
  run.gpu = resolve_gpu(scenario);
  apply_power_limit(scenario, run.gpu);
  run.fabric = check_hardware(scenario, run.gpu);
  scenario.workload.expert_parallel.node_gpus = run.fabric.gpus_per_node;
  run.scenario = scenario;
  run.profile = profile ? *profile : resolve_profile(scenario, run.gpu.name);
  check_power_limit(scenario, run);
  apply_attention_kernel(scenario, run.profile);
  return run;
}

CostModel group_cost_model(const ScenarioRun& run) {
  return CostModel(run.gpu, run.profile, group_fabric(run.fabric, run.scenario.parallelism.tp));
}

ScenarioRun run_scenario(const model::Scenario& input, const VariantStarted& started, const CostProfile* profile,
                         Symmetry symmetry) {
  ScenarioRun run = prepare_run(input, profile, symmetry);
  const model::Scenario scenario = run.scenario;
  // The engine simulates one TP group, on the nodes it spans.
  const CostModel cost = group_cost_model(run);
  check_profile_covers(scenario, run, cost);
  const model::Workload& w = scenario.workload;
  EngineOptions options = launch_options(run.profile, w.cuda_graphs);
  const model::Parallelism& par = scenario.parallelism;
  // A pipeline is simulated whole under --no-symmetry even with one replica (sim/run/pipeline_run.hpp).
  if (symmetry == Symmetry::kEveryMember && (par.replicas() > 1 || par.pp > 1)) {
    options.data_group = JobMembers{par.replicas(), par.dp_stride(), run.fabric};
  }
  for (size_t i = 0; i < scenario.variants.size(); ++i) {
    const model::Variant& variant = scenario.variants[i];
    if (started) started(variant, i);
    locate_variant_errors(scenario, i, [&] {
      run.variants.push_back(variant.chunks_auto ? run_fastest_chunks(scenario, variant, cost, options, run.fabric)
                                                 : run_variant(scenario, variant, cost, options, run.fabric));
    });
  }
  if (scenario.skew.enabled()) {
    // The same variants (with the chunk counts chosen above) again under the seeded skew, reported beside the
    // skew-free numbers, which stay the scenario's prediction.
    EngineOptions skewed = options;
    skewed.skew = scenario.skew;
    for (size_t i = 0; i < run.variants.size(); ++i) {
      VariantRun& v = run.variants[i];
      locate_variant_errors(scenario, i, [&] {
        v.skewed_time_s = run_variant(scenario, v.variant, cost, skewed, run.fabric).metrics.time_s;
      });
    }
  }
  if (const model::ExpertParallel& ep = w.expert_parallel;
      scenario.arch.moe.enabled() && (ep.routing != model::Routing::kBalanced || ep.drop)) {
    // What the skew costs: the same variants under balanced, dropless routing, beside the scenario's.
    const model::Scenario balanced = model::with_balanced_routing(scenario);
    for (size_t i = 0; i < run.variants.size(); ++i) {
      VariantRun& v = run.variants[i];
      locate_variant_errors(scenario, i, [&] {
        v.balanced_routing_time_s = run_variant(balanced, v.variant, cost, options, run.fabric).metrics.time_s;
      });
    }
  }
  const double baseline = run.variants.front().metrics.time_s;
  for (VariantRun& v : run.variants) {
    v.data_replicas = par.replicas();
    v.speedup = baseline / v.metrics.time_s;
    v.mfu = v.metrics.model_flops / (v.metrics.time_s * run.gpu.peak_bf16_flops);
    if (w.phase != model::Phase::kOps) count_memory(scenario, run.gpu, v);
  }
  return run;
}

}  // namespace tpsim::sim
