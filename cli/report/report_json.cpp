// {"scenario": {...resolved inputs...}, "results": [{"variant", "time_s", ...}]} in SI units.
#include "cli/report/report_json.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "model/moe/moe_scenario.hpp"

#include "sim/report/breakdown.hpp"
#include "sim/report/collective_summary.hpp"
#include "sim/report/critical_path.hpp"
#include "sim/report/pipeline_path.hpp"

namespace tpsim::cli {
namespace {

using Json = nlohmann::ordered_json;

// Each part of a GPU's memory, in bytes (model/memory/memory_footprint.hpp).
Json memory_parts_json(const model::MemoryFootprint& m) {
  return {{"weights_bytes", m.weights_bytes},
          {"kv_cache_bytes", m.kv_cache_bytes},
          {"activation_bytes", m.activation_bytes},
          {"buffer_bytes", m.buffer_bytes},
          {"gradient_bytes", m.gradient_bytes},
          {"optimizer_bytes", m.optimizer_bytes},
          {"tensor_bytes", m.tensor_bytes()},
          {"workspace_bytes", m.workspace_bytes},
          {"allocator_reserve_bytes", m.allocator_reserve_bytes},
          {"peak_reserved", m.peak_reserved_bytes()},
          {"context_bytes", m.context_bytes},
          {"nccl_bytes", m.nccl_bytes},
          {"symmetric_memory_bytes", m.symmetric_memory_bytes},
          {"device_bytes", m.device_bytes()}};
}

Json variant_json(const model::Variant& v) {
  Json j;
  j["name"] = v.name;
  j["tp_mode"] = model::to_string(v.mode);
  j["collective"] = model::to_string(v.algorithm);
  if (v.mode == model::TpMode::kDtp) {
    j["delta"] = v.delta;
    j["dtp_collective"] = v.dtp_allgather ? "allgather" : "allreduce";
  }
  if (v.mode == model::TpMode::kAsync) {
    j["chunks"] = v.chunks_auto ? Json("auto") : Json(v.chunks);
    j["transport"] = model::to_string(v.transport);
    j["order"] = model::to_string(v.order);
    j["boundary_overlap"] = v.boundary_overlap;
  }
  if (v.two_batch_overlap) j["two_batch_overlap"] = true;
  if (v.overlap_moe_expert_parallel_comm) j["overlap_moe_expert_parallel_comm"] = true;
  return j;
}

}  // namespace

namespace {

// The model: its shape and the parts some models have (experts, latent or linear attention).
Json model_json(const model::ArchSpec& a) {
  Json j = {{"name", a.name},
            {"model_type", a.model_type},
            {"hidden_size", a.hidden},
            {"intermediate_size", a.intermediate},
            {"num_attention_heads", a.heads},
            {"num_key_value_heads", a.kv_heads},
            {"head_dim", a.head_dim},
            {"num_hidden_layers", a.layers},
            {"vocab_size", a.vocab},
            {"qk_norm", a.qk_norm},
            {"source", a.source}};
  if (a.moe.shared_expert_ffn > 0) j["shared_expert_intermediate_size"] = a.moe.shared_expert_ffn;
  if (a.moe.enabled()) {
    j["moe_layers"] = a.moe.moe_count({0, a.layers});
    if (a.moe.group_limited()) j["router_groups"] = {{"n_group", a.moe.groups}, {"topk_group", a.moe.group_limit}};
  }
  if (const model::LatentAttentionSpec& l = a.latent; l.enabled()) {
    j["latent_attention"] = {{"q_lora_rank", l.q_lora_rank},
                             {"kv_lora_rank", l.kv_lora_rank},
                             {"qk_rope_head_dim", l.rope_head_dim},
                             {"qk_nope_head_dim", l.nope_head_dim},
                             {"v_head_dim", l.value_head_dim}};
  }
  if (const model::LinearAttentionSpec& l = a.linear; l.enabled()) {
    j["linear_attention"] = {{"layers", l.linear_count({0, a.layers})},
                             {"linear_num_key_heads", l.key_heads},
                             {"linear_num_value_heads", l.value_heads},
                             {"linear_key_head_dim", l.key_head_dim},
                             {"linear_value_head_dim", l.value_head_dim},
                             {"linear_conv_kernel_dim", l.conv_kernel},
                             {"state_bytes", l.state_bytes}};
  }
  return j;
}

// The GPU, the fabric and the power limit the run used.
Json hardware_json(const sim::ScenarioRun& run) {
  const model::Scenario& s = run.scenario;
  const sim::GpuSpec& g = run.gpu;
  return {{"gpu",
           {{"name", g.name},
            {"peak_bf16_flops", g.peak_bf16_flops},
            {"peak_fp8_flops", g.peak_fp8_flops},
            {"hbm_Bps", g.hbm_Bps},
            {"sm_count", g.sm_count},
            {"nvlink_Bps", g.nvlink_Bps}}},
          {"topology", s.topology.value},
          {"nodes", s.nodes},
          {"nic_Bps", run.fabric.nic_Bps},
          {"oversubscription", run.fabric.oversubscription},
          {"power_limit_W", g.power_limit_W}};
}

// The profile's values the run used, and which of them no measurement fitted.
Json calibration_json(const sim::ScenarioRun& run) {
  const sim::CostProfile& p = run.profile;
  Json j = {{"profile", p.name},
            {"gemm",
             {{"efficiency", p.gemm.efficiency},
              {"hbm_efficiency", p.gemm.hbm_efficiency},
              {"overhead_s", p.gemm.overhead_s},
              {"tile_m", p.gemm.tile_m},
              {"tile_n", p.gemm.tile_n}}},
            {"memory", {{"hbm_efficiency", p.memory.hbm_efficiency}, {"overhead_s", p.memory.overhead_s}}},
            {"attention", {{"efficiency", p.attention.efficiency}}},
            {"nccl",
             {{"step_latency_s", p.nccl.step_latency_s},
              {"link_efficiency", p.nccl.link_efficiency},
              {"sms", p.nccl_sms},
              {"call_latency_s", p.nccl_call_latency_s}}},
            {"copy_engine",
             {{"step_latency_s", p.copy_engine.step_latency_s}, {"link_efficiency", p.copy_engine.link_efficiency}}},
            {"launch",
             {{"host_s", p.host_launch_s},
              {"stream_wait_s", p.stream_wait_s},
              {"gpu_wait_s", p.gpu_wait_s},
              {"collective_host_s", p.collective_host_s}}}};
  const auto transport = [](const sim::TransportParams& t) {
    return Json{{"step_latency_s", t.step_latency_s}, {"link_efficiency", t.link_efficiency}};
  };
  if (p.gemm.fp8_efficiency) j["gemm"]["fp8_efficiency"] = *p.gemm.fp8_efficiency;
  if (p.attention.fp8_efficiency) j["attention"]["fp8_efficiency"] = *p.attention.fp8_efficiency;
  if (p.one_shot) {
    j["one_shot"] = transport(*p.one_shot);
    j["one_shot"]["max_bytes"] = p.one_shot_max_bytes;
  }
  if (p.nccl_small) j["nccl"]["small_messages"] = transport(*p.nccl_small);
  if (p.nccl_ll) j["nccl"]["ll"] = transport(*p.nccl_ll);
  if (p.nccl_ll128) j["nccl"]["ll128"] = transport(*p.nccl_ll128);
  if (p.nvls) {
    j["nvls"] = transport(*p.nvls);
    j["nvls"]["min_ranks"] = p.nvls_min_ranks;
  }
  if (p.network) j["network"] = transport(*p.network);
  if (p.tree) j["tree"] = transport(*p.tree);
  // Every value the run uses that no measurement fitted, with its stated source.
  j["assumed"] = Json::array();
  for (const auto& [key, source] : sim::assumed_values(p)) {
    j["assumed"].push_back({{"value", key}, {"as_written", source.value}, {"source", source.source}});
  }
  if (run.scenario.calibration_as_is && p.gpu != run.gpu.name) {
    j["transfer"] = "as_is: fitted for " + p.gpu + ", run unchanged on " + run.gpu.name;
  }
  return j;
}

// The workload as run: its phase, sizes, precision and recomputation.
Json workload_json(const model::Scenario& s) {
  const model::ArchSpec& a = s.arch;
  const model::Workload& w = s.workload;
  Json workload;
  workload["phase"] = model::to_string(w.phase);
  workload["batch"] = w.batch;
  if (w.phase == model::Phase::kForward || w.phase == model::Phase::kPrefill || w.phase == model::Phase::kTrain) {
    workload["seq_len"] = w.seq_len;
  }
  if (w.phase == model::Phase::kTrain) {
    workload["microbatches"] = w.microbatches;  // per data-parallel replica
    if (w.global_batch > 0) workload["global_batch"] = w.global_batch;
    workload["sequences_per_step"] = static_cast<int64_t>(s.parallelism.dp) * w.microbatches * w.batch;
    workload["recompute"] = model::to_string(w.recompute);
    if (w.recompute == model::Recompute::kSelective) workload["save"] = model::save_items(w.save);
    if (w.recompute_layers > 0) workload["recompute_layers"] = w.recompute_layers;
    workload["optimizer"] = w.optimizer ? "adamw" : "none";
    if (w.dtype == model::Dtype::kFp8) workload["fp8_recipe"] = model::to_string(w.fp8_recipe);
  }
  if (w.phase == model::Phase::kDecode || w.phase == model::Phase::kGenerate) workload["context_len"] = w.context_len;
  if (w.phase == model::Phase::kGenerate) workload["gen_len"] = w.gen_len;
  workload["tokens_per_pass"] = model::primary_pass(w).tokens();
  workload["dtype"] = model::to_string(w.dtype);
  workload["attention_dtype"] = model::to_string(w.attention_dtype);
  workload["layers"] = w.layers;         // simulated
  workload["memory_layers"] = a.layers;  // memory is counted for every layer, whatever `layers` simulates
  workload["cuda_graphs"] = w.cuda_graphs;
  return workload;
}

// The parallel layout, with the data-parallel synchronisation as simulated.
Json parallelism_json(const sim::ScenarioRun& run) {
  const model::Scenario& s = run.scenario;
  const model::Workload& w = s.workload;
  Json j = {{"tp", s.parallelism.tp}, {"pp", s.parallelism.pp}, {"dp", s.parallelism.dp}, {"ep", s.parallelism.ep}};
  if (s.parallelism.etp > 1) j["etp"] = s.parallelism.etp;
  if (s.parallelism.cp > 1) {
    j["cp"] = s.parallelism.cp;
    j["cp_comm_type"] = model::to_string(s.parallelism.cp_comm);
  }
  if (s.parallelism.pp > 1 && s.parallelism.dp > 1) j["order"] = model::to_string(s.parallelism.order);
  if (const model::DataParallel& dp = w.data_parallel; dp.enabled()) {
    Json sync = {{"mode", dp.distributed_optimizer ? "distributed_optimizer"
                          : dp.fsdp                ? "fsdp"
                                                   : "ddp"},
                 {"reduce_dtype", dp.reduce_bytes == 2 ? "bf16" : "fp32"}};
    // 1: one replica simulated, its collectives in closed form; dp: every replica (--no-symmetry).
    sync["replicas_simulated"] = run.symmetry == sim::Symmetry::kEveryMember ? dp.degree : 1;
    if (dp.fsdp) {
      sync["reshard_after_forward"] = dp.reshard_after_forward;
      sync["shard_degree"] = dp.shard_degree;
      if (dp.fp8_all_gather) {  // only where set: FSDP's other runs keep their keys
        sync["fp8_all_gather"] = true;
        sync["precompute_fp8_scales"] = dp.precompute_fp8_scales;
      }
    } else if (dp.distributed_optimizer) {
      sync["overlap_grad_reduce"] = dp.overlap_grad_reduce;
      sync["overlap_param_gather"] = dp.overlap_param_gather;
      sync["bucket_size"] = dp.bucket_size();
    } else {
      sync["bucket_bytes"] = dp.bucket_bytes;
    }
    j["data_parallel"] = sync;
  }
  return j;
}

// The routing every variant runs (moe_routing.hpp).
Json moe_json(const model::Scenario& s) {
  const model::Workload& w = s.workload;
  const model::ExpertParallel& ep = w.expert_parallel;
  const model::RoutingSummary r = model::scenario_routing(s);
  Json moe = {
      {"experts", s.arch.moe.experts},
      {"experts_per_token", s.arch.moe.experts_per_token},
      {"experts_per_gpu", s.arch.moe.experts / ep.degree},
      {"expert_tp", model::experts_split_over_tp(s.parallelism.tp, ep.degree) ? s.parallelism.tp : ep.tensor_degree},
      {"routing", model::to_string(ep.routing)},
      {"seed", ep.seed},
      {"busiest_over_mean", r.mean_imbalance},
      {"worst_layer_busiest_over_mean", r.worst_imbalance},
      {"worst_layer", r.worst_layer},
      {"dropped_fraction", r.dropped_fraction}};
  if (ep.routing == model::Routing::kZipf) moe["zipf_s"] = ep.zipf_s;
  if (ep.routing == model::Routing::kFromFile) moe["file"] = ep.routing_file;
  if (ep.drop) moe["capacity_factor"] = ep.capacity_factor;
  return moe;
}

}  // namespace

Json scenario_json(const sim::ScenarioRun& run) {
  const model::Scenario& s = run.scenario;
  Json j;
  j["name"] = s.name;
  j["file"] = s.file;
  j["model"] = model_json(s.arch);
  j["hardware"] = hardware_json(run);
  if (s.workload.implementation.is_set()) j["implementation"] = model::describe(s.workload.implementation);
  j["calibration"] = calibration_json(run);
  j["workload"] = workload_json(s);
  j["parallelism"] = parallelism_json(run);
  if (s.skew.enabled()) {
    j["skew"] = {{"kernel_cv", s.skew.kernel_cv}, {"gpu_cv", s.skew.gpu_cv}, {"seed", s.skew.seed}};
  }
  if (s.arch.moe.enabled()) j["moe"] = moe_json(s);
  j["variants"] = Json::array();
  for (const auto& v : s.variants) j["variants"].push_back(variant_json(v));
  return j;
}

namespace {

// The schedule, the sends between stages and each stage's share of the step.
Json pipeline_json(const sim::PipelineRun& p) {
  Json j;
  j["schedule"] = model::to_string(p.spec.schedule);
  j["stages"] = p.stages.size();
  j["virtual_stages"] = p.spec.virtual_stages;
  j["microbatches"] = p.microbatches;
  j["pipeline_s"] = p.pipeline_s;
  j["bubble_fraction"] = p.bubble_fraction;
  j["programs_simulated"] = p.programs_simulated;
  j["simulated_whole"] = p.simulated_whole;
  j["send_bytes_per_gpu"] = p.activation_bytes;
  j["send_exposed_s"] = p.send_exposed_s;
  j["grad_norm_sync_s"] = p.grad_norm_sync_s;
  j["tied_embedding_sync_s"] = p.tied_embedding_sync_s;
  j["hops"] = Json::array();
  for (size_t i = 0; i < p.hop_s.size(); ++i) {
    j["hops"].push_back({{"send_s", p.hop_s[i]}, {"across_nodes", static_cast<bool>(p.hop_crosses_nodes[i])}});
  }
  j["per_stage"] = Json::array();
  for (const sim::StageRun& s : p.stages) {
    j["per_stage"].push_back({{"layers", s.layers},
                              {"forward_s", s.forward_s},
                              {"backward_s", s.backward_s},
                              {"weight_gradient_s", s.weight_gradient_s},
                              {"gathered_forward_s", s.gathered_forward_s},
                              {"reduce_tail_s", s.reduce_tail_s},
                              {"optimizer_s", s.optimizer_s},
                              {"norm_s", s.norm_s},
                              {"busy_s", s.busy_s},
                              {"end_s", s.end_s},
                              {"peak_in_flight", s.peak_in_flight},
                              {"memory_per_gpu_bytes", s.memory.device_bytes()},
                              {"memory", memory_parts_json(s.memory)}});
  }
  return j;
}

}  // namespace

namespace {

// Every pass's time by module and kind of work.
Json breakdown_json(const sim::VariantRun& v) {
  Json rows = Json::array();
  for (const sim::PassTrace& pass : v.passes) {
    for (const sim::BreakdownRow& b : sim::breakdown(pass)) {
      rows.push_back({{"pass", pass.label},
                      {"module", b.module},
                      {"gemm_s", b.gemm_s},
                      {"attention_s", b.attention_s},
                      {"memory_s", b.memory_s},
                      {"communication_s", b.communication_s},
                      {"exposed_comm_s", b.exposed_comm_s}});
    }
  }
  return rows;
}

// Each collective the passes ran: its size, ranks and count, and how it ran and was costed.
Json collectives_json(const sim::VariantRun& v) {
  Json rows = Json::array();
  for (const sim::CollectiveRun& c : sim::collectives_run(v.passes)) {
    Json g;
    g["pass"] = c.pass;
    g["collective"] = model::to_string(c.kind);
    g["tensor_bytes"] = c.tensor_bytes;
    g["ranks"] = c.ranks;
    g["count"] = c.count;
    g["algorithm"] = model::to_string(c.plan.algorithm);
    if (c.plan.nccl_run) {
      g["protocol"] = model::to_string(c.plan.nccl_run->protocol);
    } else if (c.plan.algorithm == model::CollectiveAlgorithm::kRing) {
      g["protocol"] = model::to_string(c.plan.protocol);
    }
    g["ran_as"] = sim::ran_as(c.plan);
    g["costed_by"] = sim::costed_by(c.plan);
    if (c.plan.nccl_choice) {
      g["nccl_choice"] = sim::nccl_option_name(c.plan.nccl_choice->algorithm, c.plan.nccl_choice->protocol);
    }
    if (!c.plan.deviation.empty()) g["deviation"] = c.plan.deviation;
    rows.push_back(g);
  }
  return rows;
}

// Memory per GPU by part, whether it fits, and what it is compared with.
void add_memory(Json& r, const sim::VariantRun& v, const sim::GpuSpec& gpu) {
  const std::optional<bool> fits = sim::fits_memory(v, gpu);
  r["memory_per_gpu_bytes"] = v.memory->device_bytes();
  r["fits_memory"] = fits ? Json(*fits) : Json();
  r["memory"] = memory_parts_json(*v.memory);
  r["memory"]["usable_hbm_bytes"] = sim::usable_hbm_bytes(gpu);
  r["memory"]["hbm_bytes"] = gpu.hbm_bytes;
  r["memory"]["runtime_source"] = gpu.runtime_memory.given ? Json(gpu.runtime_memory.source) : Json();
}

}  // namespace

// The SM clock the variant's compute-bound kernels ran at, to the short benchmarks' its profile was fitted on (below 1
// under a power limit, or under the limiter's window where the program's mean draw meets the limit): a pipeline's
// step's, else the first pass's; each pass's as well where they differ (a generate's prefill and decode steps).
void add_clock(Json& r, const sim::VariantRun& v) {
  r["clock_ratio"] = v.pipeline ? v.pipeline->clock_ratio : v.passes.front().timeline.clock_ratio;
  const bool one_clock = std::all_of(v.passes.begin(), v.passes.end(), [&](const sim::PassTrace& pass) {
    return pass.timeline.clock_ratio == v.passes.front().timeline.clock_ratio;
  });
  if (v.pipeline || one_clock) return;
  r["clock_ratio_by_pass"] = Json::object();
  for (const sim::PassTrace& pass : v.passes) r["clock_ratio_by_pass"][pass.label] = pass.timeline.clock_ratio;
}

Json result_row(const AxisValues& values, const sim::VariantRun& v, const sim::GpuSpec& gpu) {
  const sim::Metrics& m = v.metrics;
  const model::LayerGraph& graph = v.passes.front().graph;
  Json r;
  if (!values.empty()) {
    Json point;
    for (const auto& [axis, value] : values) point[axis] = value;
    r["point"] = point;
  }
  r["variant"] = v.variant.name;
  r["tp_mode"] = model::to_string(v.variant.mode);
  if (v.variant.mode == model::TpMode::kAsync) {
    r["chunks"] = v.variant.chunks;
    r["chunks_chosen_by"] = v.variant.chunks_auto ? "auto" : "scenario";
  }
  r["time_s"] = m.time_s;
  r["compute_s"] = m.compute_s;
  r["comm_s"] = m.comm_s;
  r["exposed_comm_s"] = m.exposed_comm_s;
  if (v.data_replicas > 1) {
    r["data_comm_s"] = m.data_comm_s;
    r["exposed_data_comm_s"] = m.exposed_data_comm_s;
  }
  if (m.expert_comm_s > 0) {
    r["expert_comm_s"] = m.expert_comm_s;
    r["exposed_expert_comm_s"] = m.exposed_expert_comm_s;
  }
  if (sim::is_job(v) || m.expert_comm_s > 0) {  // its exposed communication per dimension of the mesh
    const sim::ExposedByDimension e = sim::exposed_by_dimension(v);
    r["exposed_by_dimension_s"] = {{"tp", e.tp_s}, {"pp", e.pp_s}, {"dp", e.dp_s}};
    if (m.expert_comm_s > 0) r["exposed_by_dimension_s"]["ep"] = e.ep_s;
    if (m.context_comm_s > 0) r["exposed_by_dimension_s"]["cp"] = e.cp_s;
  }
  r["overlap"] = m.overlap;
  r["idle_s"] = m.idle_s;
  r["speedup"] = v.speedup;
  r["tokens_per_s"] = v.tokens_per_s;  // by the TP group (the whole pipeline under pp)
  r["tokens_per_s_per_gpu"] = v.tokens_per_s / sim::replica_gpus(v);
  r["model_flops_per_gpu"] = m.model_flops;
  r["mfu"] = v.mfu;
  if (v.ttft_s) r["ttft_s"] = *v.ttft_s;
  if (v.tpot_s) r["tpot_s"] = *v.tpot_s;
  if (v.skewed_time_s) r["skewed_time_s"] = *v.skewed_time_s;
  if (v.balanced_routing_time_s)
    r["balanced_routing_time_s"] = *v.balanced_routing_time_s;  // under the scenario's skew: its own section
  r["passes_simulated"] = v.passes_simulated;
  add_clock(r, v);
  if (!v.pipeline) {  // the one program every GPU runs; a pipeline's stages run several (its per_stage entries)
    r["ops_per_gpu"] = graph.size();
    r["matmul_flops_per_gpu"] = graph.matmul_flops();
    r["wire_bytes_per_gpu"] = graph.wire_bytes_per_rank();
  }
  if (v.memory) add_memory(r, v, gpu);
  if (v.pipeline) {
    r["pipeline_bubble_fraction"] = v.pipeline->bubble_fraction;
    r["pipeline"] = pipeline_json(*v.pipeline);
  }
  r["breakdown"] = breakdown_json(v);
  if (v.passes.front().label == model::to_string(model::Phase::kTrain)) {  // forward / backward / optimizer
    r["stages"] = Json::object();
    for (const auto& [stage, seconds] : sim::stage_times(v.passes.front())) r["stages"][stage + "_s"] = seconds;
  }
  if (sim::is_op_list(v.passes.front())) {  // each op's times
    r["ops"] = Json::array();
    for (const sim::OpTiming& t : sim::op_timings(v.passes.front())) {
      r["ops"].push_back({{"name", t.name},
                          {"stream", t.stream},
                          {"start_s", t.start_s},
                          {"end_s", t.end_s},
                          {"duration_s", t.end_s - t.start_s}});
    }
  }
  r["collectives"] = collectives_json(v);
  return r;
}

// One chain: its shares by kind and every link.
Json path_json(const std::string& label, const std::vector<sim::PathLink>& path) {
  Json by_kind = Json::object();
  for (const auto& [kind, share] : sim::critical_path_by_kind(path)) by_kind[kind] = share;
  Json links = Json::array();
  for (const sim::PathLink& link : path) {
    links.push_back({{"op", link.op},
                     {"kind", link.kind},
                     {"rank", link.rank},
                     {"start_s", link.start_s},
                     {"end_s", link.end_s},
                     {"share", link.share}});
  }
  return {{"pass", label}, {"by_kind", by_kind}, {"links", links}};
}

// Under a pipeline the step's chain first (its links' rank is the stage), then each pass's.
Json critical_path_json(const sim::VariantRun& v) {
  Json passes = Json::array();
  if (v.pipeline) passes.push_back(path_json("step", sim::pipeline_critical_path(*v.pipeline)));
  for (const sim::PassTrace& pass : v.passes) passes.push_back(path_json(pass.label, sim::critical_path(pass)));
  return passes;
}

std::string result_json(const std::vector<PointRun>& points, bool critical_path) {
  Json root;
  root["scenario"] = scenario_json(points.front().run);
  root["results"] = Json::array();
  for (const PointRun& point : points) {
    for (const sim::VariantRun& v : point.run.variants) {
      Json row = result_row(point.values, v, point.run.gpu);
      if (critical_path) row["critical_path"] = critical_path_json(v);
      root["results"].push_back(std::move(row));
    }
  }
  return root.dump(2) + "\n";
}

}  // namespace tpsim::cli
