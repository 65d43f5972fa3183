// {"scenario": {...resolved inputs...}, "results": [{"variant", "time_s", ...}]} in SI units.
#include "cli/report_json.hpp"

#include <nlohmann/json.hpp>

namespace tpsim::cli {
namespace {

using Json = nlohmann::ordered_json;

Json variant_json(const model::Variant& v) {
  Json j;
  j["name"] = v.name;
  j["tp_mode"] = model::to_string(v.mode);
  if (v.mode == model::TpMode::kAsync) {
    j["chunks"] = v.chunks;
    j["transport"] = model::to_string(v.transport);
    j["order"] = model::to_string(v.order);
    j["boundary_overlap"] = v.boundary_overlap;
  }
  return j;
}

Json scenario_json(const sim::ScenarioRun& run) {
  const model::Scenario& s = run.scenario;
  Json j;
  j["name"] = s.name;
  j["file"] = s.file;
  const model::ArchSpec& a = s.arch;
  j["model"] = {{"name", a.name},
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
  const sim::GpuSpec& g = run.gpu;
  j["hardware"] = {{"gpu",
                    {{"name", g.name},
                     {"peak_bf16_flops", g.peak_bf16_flops},
                     {"hbm_Bps", g.hbm_Bps},
                     {"sm_count", g.sm_count},
                     {"nvlink_Bps", g.nvlink_Bps}}},
                   {"topology", s.topology.value},
                   {"nodes", s.nodes}};
  const sim::CostProfile& p = run.profile;
  j["calibration"] = {
      {"profile", p.name},
      {"gemm",
       {{"efficiency", p.gemm.efficiency},
        {"hbm_efficiency", p.gemm.hbm_efficiency},
        {"overhead_s", p.gemm.overhead_s},
        {"tile_m", p.gemm.tile_m},
        {"tile_n", p.gemm.tile_n}}},
      {"memory", {{"hbm_efficiency", p.memory.hbm_efficiency}, {"overhead_s", p.memory.overhead_s}}},
      {"attention", {{"efficiency", p.attention.efficiency}}},
      {"nccl",
       {{"step_latency_s", p.nccl.step_latency_s}, {"link_efficiency", p.nccl.link_efficiency}, {"sms", p.nccl_sms}}},
      {"copy_engine",
       {{"step_latency_s", p.copy_engine.step_latency_s}, {"link_efficiency", p.copy_engine.link_efficiency}}}};
  const model::Workload& w = s.workload;
  j["workload"] = {
      {"phase", model::to_string(w.phase)}, {"batch", w.batch},  {"seq_len", w.seq_len}, {"tokens", w.tokens()},
      {"dtype", model::to_string(w.dtype)}, {"layers", w.layers}};
  j["parallelism"] = {
      {"tp", s.parallelism.tp}, {"pp", s.parallelism.pp}, {"dp", s.parallelism.dp}, {"ep", s.parallelism.ep}};
  j["variants"] = Json::array();
  for (const auto& v : s.variants) j["variants"].push_back(variant_json(v));
  return j;
}

}  // namespace

std::string result_json(const sim::ScenarioRun& run) {
  Json root;
  root["scenario"] = scenario_json(run);
  root["results"] = Json::array();
  for (const sim::VariantRun& v : run.variants) {
    const sim::Metrics& m = v.metrics;
    root["results"].push_back({{"variant", v.variant.name},
                               {"tp_mode", model::to_string(v.variant.mode)},
                               {"time_s", m.time_s},
                               {"compute_s", m.compute_s},
                               {"comm_s", m.comm_s},
                               {"exposed_comm_s", m.exposed_comm_s},
                               {"overlap", m.overlap},
                               {"idle_s", m.idle_s},
                               {"speedup", v.speedup},
                               {"tokens_per_s", v.tokens_per_s},
                               {"ops_per_gpu", v.graph.size()},
                               {"matmul_flops_per_gpu", v.graph.matmul_flops()},
                               {"wire_bytes_per_gpu", v.graph.wire_bytes_per_rank()}});
  }
  return root.dump(2) + "\n";
}

}  // namespace tpsim::cli
