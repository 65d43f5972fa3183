// Fixed-width table: times in milliseconds, overlap in percent, speedup over the first variant.
#include "cli/report/report_table.hpp"

#include "cli/report/report_memory.hpp"
#include "cli/report/text_table.hpp"

#include "base/units.hpp"
#include "model/moe/moe_scenario.hpp"
#include "sim/report/breakdown.hpp"
#include "sim/report/collective_summary.hpp"
#include "sim/report/critical_path.hpp"
#include "sim/report/pipeline_path.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>

namespace tpsim::cli {
namespace {

// " at 500 W" when the GPUs run below their board power; empty otherwise.
std::string power_limit_text(const sim::GpuSpec& gpu) {
  if (gpu.power_limit_W <= 0 || gpu.power_limit_W >= gpu.board_power_W) return "";
  return " at " + model::format_number("%g", gpu.power_limit_W) + " W";
}

// "151-221 MiB", or "900 KiB-1.2 MiB" across units.
std::string size_range(double low, double high) {
  const std::string a = model::human_bytes(low), b = model::human_bytes(high);
  const size_t unit_a = a.rfind(' '), unit_b = b.rfind(' ');
  return a.substr(unit_a) == b.substr(unit_b) ? a.substr(0, unit_a) + "-" + b : a + "-" + b;
}

// Collectives of one kind that ran alike at more sizes than this (an MoE layer's all-to-alls under skewed routing,
// one size per layer) print as one item: their sizes as a range, and how many.
constexpr size_t kSizesListed = 3;

// One variant's collectives as "kind size algorithm/protocol [profile section]" items, in order of first appearance;
// those of one kind that ran alike at more than kSizesListed sizes as one item, the range of their sizes in place of
// the first.
std::string collective_items(const std::vector<sim::CollectiveRun>& collectives) {
  const auto how = [](const sim::CollectiveRun& c) {
    return sim::ran_as(c.plan) + " [" + sim::costed_by(c.plan) + "]";
  };
  std::map<std::string, std::set<double>> sizes;  // by kind and how they ran
  for (const sim::CollectiveRun& c : collectives) sizes[model::to_string(c.kind) + " " + how(c)].insert(c.tensor_bytes);
  std::vector<std::string> items;
  for (const sim::CollectiveRun& c : collectives) {
    const std::string kind = model::to_string(c.kind);
    const std::set<double>& all = sizes[kind + " " + how(c)];
    const std::string item = all.size() > kSizesListed ? kind + " " + size_range(*all.begin(), *all.rbegin()) + " (" +
                                                             std::to_string(all.size()) + " sizes) " + how(c)
                                                       : kind + " " + model::human_bytes(c.tensor_bytes) + " " + how(c);
    if (std::find(items.begin(), items.end(), item) == items.end()) items.push_back(item);
  }
  std::string line;
  for (const std::string& item : items) line += (line.empty() ? "" : ", ") + item;
  return line;
}

// One line per variant with collectives: what each group of them ran as (why any did not run NCCL's own choice is
// said once per run, collective_deviations).
std::string collectives_notes(const sim::ScenarioRun& run) {
  std::string out;
  for (const sim::VariantRun& v : run.variants) {
    const std::vector<sim::CollectiveRun> collectives = sim::collectives_run(v.passes);
    const std::string line = collective_items(collectives);
    if (!line.empty()) out += "  " + v.variant.name + ": " + line + "\n";
  }
  if (!out.empty()) out = "collectives as run [costed by profile section]:\n" + out;
  return out;
}

// Under the scenario's skew: each variant's time, its cost over the skew-free time, and the speedups it leaves.
std::string skew_notes(const sim::ScenarioRun& run) {
  const model::RankSkew& skew = run.scenario.skew;
  if (!skew.enabled()) return "";
  std::string out = "under rank skew (kernel CV " + model::format_number("%.1f%%", skew.kernel_cv * 100) + ", GPU CV " +
                    model::format_number("%.1f%%", skew.gpu_cv * 100) + ", seed " + std::to_string(skew.seed) +
                    "; the table above has none):\n";
  const double baseline = run.variants.front().skewed_time_s.value_or(0);
  for (const sim::VariantRun& v : run.variants) {
    const double skewed = v.skewed_time_s.value_or(0);
    out += "  " + v.variant.name + ": " + model::format_number("%.3f", skewed * 1e3) + " ms (" +
           model::format_number("%+.2f%%", (skewed / v.metrics.time_s - 1) * 100) + "), speedup " +
           model::format_number("%.3fx", baseline / skewed) + "\n";
  }
  return out;
}

// Milliseconds with three decimals, right-aligned to `width`.
std::string ms(double seconds, size_t width = 10) {
  return pad(model::format_number("%.3f", seconds * 1e3), width, false);
}

// What one training step holds: "one step: 128 sequences x 8192 tokens = 1.05M tokens".
std::string step_text(const model::Scenario& s) {
  const model::Workload& w = s.workload;
  const int64_t sequences = static_cast<int64_t>(s.parallelism.dp) * w.microbatches * w.batch;
  const double tokens = static_cast<double>(sequences) * static_cast<double>(w.seq_len);
  const std::string count = tokens >= 1e6   ? model::format_number("%.2fM", tokens / 1e6)
                            : tokens >= 1e3 ? model::format_number("%.1fK", tokens / 1e3)
                                            : model::format_number("%.0f", tokens);
  return "one step: " + std::to_string(sequences) + " sequences x " + std::to_string(w.seq_len) + " tokens = " + count +
         " tokens";
}

// " x pp=4 (1f1b, 2 virtual stages)" under a pipeline, then " x dp=8 (fsdp)" with data parallelism, then
// ", placed tp, pp, dp" when the stages sit inside the replicas' span; empty without either.
std::string pipeline_text(const model::Scenario& s) {
  std::string text;
  if (s.parallelism.cp > 1) {
    text = " x cp=" + std::to_string(s.parallelism.cp) + " (" + model::to_string(s.parallelism.cp_comm) + ")";
  }
  if (s.parallelism.pp > 1) {
    text += " x pp=" + std::to_string(s.parallelism.pp) + " (" + model::to_string(s.pipeline.schedule);
    if (s.pipeline.virtual_stages > 1) text += ", " + std::to_string(s.pipeline.virtual_stages) + " virtual stages";
    text += ")";
  }
  if (s.parallelism.dp > 1) {
    text += " x dp=" + std::to_string(s.parallelism.dp) + " (" + model::to_string(s.workload.data_parallel) + ")";
  }
  if (s.parallelism.ep > 1) text += ", ep=" + std::to_string(s.parallelism.ep);
  if (s.parallelism.order != model::MeshOrder::kTpDpPp) text += ", placed " + model::to_string(s.parallelism.order);
  return text;
}

// With data parallelism, per variant: the data group's collectives of one step, their time in flight and exposed.
std::string data_parallel_notes(const sim::ScenarioRun& run) {
  const model::DataParallel& dp = run.scenario.workload.data_parallel;
  if (!dp.enabled()) return "";
  std::string out;
  for (const sim::VariantRun& v : run.variants) {
    // One step's program; under a pipeline, every distinct chunk's synchronised micro-batch.
    std::map<model::CollectiveKind, int> counts;
    double wire = 0;
    for (const sim::PassTrace& pass : v.passes) {
      for (model::OpId id = 0; id < pass.graph.size(); ++id) {
        const model::Op& op = pass.graph.op(id);
        if (op.group != model::CommGroup::kData || op.tensor_bytes <= sizeof(float)) continue;
        ++counts[op.collective];
        wire += model::wire_bytes_per_rank(op);
      }
    }
    std::string what;
    for (const auto& [kind, count] : counts) {
      what += (what.empty() ? "" : " + ") + std::to_string(count) + " " + model::to_string(kind);
    }
    const bool every = run.symmetry == sim::Symmetry::kEveryMember;
    out += "data parallelism of " + v.variant.name + ": " + model::to_string(dp) + " over " +
           std::to_string(dp.degree) + (every ? " replicas (each simulated, --no-symmetry), " : " replicas, ") + what +
           (v.pipeline ? " in the distinct chunks' programs together (" + model::human_bytes(wire) +
                             " sent per GPU, summed over them), "
                       : " per step (" + model::human_bytes(wire) + " out of each GPU), ") +
           model::format_number("%.3f", v.metrics.data_comm_s * 1e3) + " ms in flight, " +
           model::format_number("%.3f", v.metrics.exposed_data_comm_s * 1e3) + " ms exposed\n";
  }
  return out;
}

// An MoE model's routing, the same for every variant: the busiest expert-parallel GPU's copies over the mean
// GPU's (the mean over the simulated layers, and the worst layer), the copies a capacity drops, and what a
// skewed routing costs each variant over balanced routing.
std::string moe_notes(const sim::ScenarioRun& run) {
  const model::Scenario& s = run.scenario;
  if (!s.arch.moe.enabled()) return "";
  const model::ExpertParallel& ep = s.workload.expert_parallel;
  const model::RoutingSummary r = model::scenario_routing(s);
  const int tp = s.parallelism.tp;
  const std::string held =
      model::experts_split_over_tp(tp, ep.degree)
          ? "all " + std::to_string(s.arch.moe.experts) + ", 1/" + std::to_string(tp) + " of each per GPU (expert TP " +
                std::to_string(tp) + ", ep=1), "
      : ep.tensor_degree > 1
          ? std::to_string(s.arch.moe.experts / ep.degree) + " of " + std::to_string(s.arch.moe.experts) + ", 1/" +
                std::to_string(ep.tensor_degree) + " of each per GPU (ep=" + std::to_string(ep.degree) +
                ", etp=" + std::to_string(ep.tensor_degree) + "), "
          : std::to_string(s.arch.moe.experts / ep.degree) + " of " + std::to_string(s.arch.moe.experts) +
                " per GPU (ep=" + std::to_string(ep.degree) + "), ";
  std::string out = "experts: " + held + std::to_string(s.arch.moe.experts_per_token) + " per token, routing " +
                    model::to_string(ep) + ": the busiest GPU computes " +
                    model::format_number("%.2f", r.mean_imbalance) + "x the mean GPU's copies (mean over layers; " +
                    model::format_number("%.2f", r.worst_imbalance) + "x at layer " + std::to_string(r.worst_layer) +
                    ")";
  if (ep.drop) out += ", " + model::format_number("%.1f", 100.0 * r.dropped_fraction) + "% dropped";
  out += "\n";
  for (const sim::VariantRun& v : run.variants) {
    if (!v.balanced_routing_time_s) continue;
    out += "  " + v.variant.name + ": " + model::format_number("%.3f", v.metrics.time_s * 1e3) + " ms, " +
           model::format_number("%+.2f%%", (v.metrics.time_s / *v.balanced_routing_time_s - 1) * 100) +
           " over balanced dropless routing (" + model::format_number("%.3f", *v.balanced_routing_time_s * 1e3) +
           " ms)\n";
  }
  return out;
}

// For a job (pp or dp > 1) or expert parallelism, per variant: its exposed communication split by the mesh's
// dimensions.
std::string exposed_by_dimension_notes(const sim::ScenarioRun& run) {
  const model::Parallelism& par = run.scenario.parallelism;
  const auto ms_text = [](double seconds) { return ms(seconds, 0) + " ms"; };
  std::string out;
  for (const sim::VariantRun& v : run.variants) {
    if (!sim::is_job(v) && par.ep == 1) continue;
    const sim::ExposedByDimension e = sim::exposed_by_dimension(v);
    out += "exposed communication of " + v.variant.name + " by dimension: tp " + ms_text(e.tp_s);
    if (par.pp > 1) out += ", pp " + ms_text(e.pp_s) + " (the sends, added to the step)";
    if (par.replicas() > 1) out += ", dp " + ms_text(e.dp_s);
    if (par.cp > 1) out += ", cp " + ms_text(e.cp_s) + " (the K/V exchanges)";
    if (par.ep > 1) out += ", ep " + ms_text(e.ep_s);
    out += "\n";
  }
  return out;
}

// Before the optimizer's clipping, the stages' norms summed (and tied embeddings' gradients between two stages).
std::string stage_sync_text(const sim::PipelineRun& p) {
  if (p.grad_norm_sync_s <= 0) return "";
  std::string text =
      "; the stages' gradient norms summed in " + model::format_number("%.3f", p.grad_norm_sync_s * 1e3) + " ms";
  if (p.tied_embedding_sync_s > 0) {
    text += ", the tied embedding's gradients between first and last stage in " +
            model::format_number("%.3f", p.tied_embedding_sync_s * 1e3) + " ms";
  }
  return text;
}

// Under a pipeline, per variant: its bubble, the sends between stages, and each stage's passes per micro-batch.
std::string pipeline_notes(const sim::ScenarioRun& run) {
  std::string out;
  for (const sim::VariantRun& v : run.variants) {
    if (!v.pipeline) continue;
    const sim::PipelineRun& p = *v.pipeline;
    double slowest = 0;
    bool across = false;
    const bool synced = run.scenario.workload.data_parallel.enabled();
    for (size_t i = 0; i < p.hop_s.size(); ++i) {
      slowest = std::max(slowest, p.hop_s[i]);
      across = across || p.hop_crosses_nodes[i];
    }
    out +=
        "pipeline of " + v.variant.name + ": " + model::to_string(p.spec.schedule) + ", " +
        std::to_string(p.stages.size()) + " stages x " + std::to_string(p.microbatches) + " micro-batches, bubble " +
        model::format_number("%.1f%%", p.bubble_fraction * 100) + " of the passes' span; each send " +
        model::human_bytes(p.activation_bytes) + " per GPU, " + model::format_number("%.3f", slowest * 1e3) + " ms" +
        (across ? " across nodes" : " over NVLink") + ", exposed " +
        model::format_number("%.3f", p.send_exposed_s * 1e3) + " ms; " + std::to_string(p.programs_simulated) +
        " stage programs simulated" +
        (p.simulated_whole ? ", then the whole step (every stage and replica at once, --no-symmetry)" : "") +
        stage_sync_text(p) + "\n" +
        "  stage  layers  forward ms  backward ms  wgrad ms  optimizer ms    busy ms     end ms  in flight  mem GiB" +
        // Data parallelism: the first forward with its gathers from the step's start, the reduction's tail.
        (synced ? "  gathered fwd ms  reduce tail ms\n" : "\n");
    for (size_t i = 0; i < p.stages.size(); ++i) {
      const sim::StageRun& s = p.stages[i];
      out += pad(std::to_string(i), 7, false) + pad(std::to_string(s.layers), 8, false) + ms(s.forward_s, 12) +
             ms(s.backward_s, 13) + ms(s.weight_gradient_s, 10) + ms(s.optimizer_s, 14) + ms(s.busy_s, 11) +
             ms(s.end_s, 11) + pad(std::to_string(s.peak_in_flight), 11, false) +
             pad(model::format_number("%.1f", s.memory.device_bytes() / sim::kGiB), 9, false) +
             (synced ? ms(s.gathered_forward_s, 17) + ms(s.reduce_tail_s, 16) : std::string()) + "\n";
    }
  }
  return out;
}

// A stage's op times over the step by kind: each of its programs' totals times the micro-batches that ran it.
sim::BreakdownRow stage_kinds(const sim::VariantRun& v, const sim::StageRun& stage) {
  sim::BreakdownRow sum;
  for (const auto& [pass, count] : stage.programs) {
    const sim::BreakdownRow total = sim::breakdown(v.passes[pass]).back();
    sum.gemm_s += count * total.gemm_s;
    sum.attention_s += count * total.attention_s;
    sum.memory_s += count * total.memory_s;
    sum.communication_s += count * total.communication_s;
    sum.exposed_comm_s += count * total.exposed_comm_s;
  }
  return sum;
}

// The step of a pipeline variant first: per stage, where its GPUs' time over the whole step goes (every micro-batch
// through its chunks, by kind), the optimizer, and the waiting (the bubble, the sends, the stages' norms) up to its
// end.
std::string step_breakdown(const sim::VariantRun& v) {
  const sim::PipelineRun& p = *v.pipeline;
  size_t slowest = 0;
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < p.stages.size(); ++i) {
    const sim::StageRun& s = p.stages[i];
    if (s.end_s >= p.stages[slowest].end_s) slowest = i;
    const sim::BreakdownRow k = stage_kinds(v, s);
    std::vector<std::string> row = {
        std::to_string(i), ms(k.gemm_s, 0),          ms(k.attention_s, 0),
        ms(k.memory_s, 0), ms(k.communication_s, 0), ms(k.exposed_comm_s, 0),
        ms(s.busy_s, 0),   ms(s.optimizer_s, 0),     ms(s.end_s - s.busy_s - s.optimizer_s, 0),
        ms(s.end_s, 0)};
    // Stages that read alike (a deep pipeline's middle ones) share one row: "1-14".
    if (!rows.empty() && std::equal(row.begin() + 1, row.end(), rows.back().begin() + 1)) {
      std::string& first = rows.back().front();
      rows.back().front() = first.substr(0, first.find('-')) + "-" + std::to_string(i);
      continue;
    }
    rows.push_back(std::move(row));
  }
  return "step of " + v.variant.name + ": " + ms(v.metrics.time_s, 0) + " ms, the end of stage " +
         std::to_string(slowest) + "; per stage, ms per GPU over the step (" + std::to_string(p.microbatches) +
         " micro-batches; op times summed, overlapped work counts in each kind; waiting: the bubble, sends and the "
         "stages' norms):\n" +
         text_table({"stage", "gemm", "attention", "memory", "communication", "exposed comm", "passes", "optimizer",
                     "waiting", "end"},
                    rows, 0);
}

// "PREFIX 12.345 ms, N links): kind share ..." then the largest groups of links.
std::string path_text(const std::string& prefix, double seconds, const std::vector<sim::PathLink>& path) {
  constexpr size_t kTopGroups = 8;
  std::string out =
      prefix + model::format_number("%.3f", seconds * 1e3) + " ms, " + std::to_string(path.size()) + " links):";
  for (const auto& [kind, share] : sim::critical_path_by_kind(path)) {
    out += " " + kind + " " + model::format_number("%.1f%%", share * 100);
  }
  out += "\n";
  for (const sim::PathGroup& g : sim::critical_path_groups(path, kTopGroups)) {
    out += "  " + pad(model::format_number("%.1f%%", g.share * 100), 6, false) + "  " + g.name +
           (g.count > 1 ? " (x" + std::to_string(g.count) + ")" : std::string()) + "\n";
  }
  return out;
}

// A training step's shape after its sequence: micro-batches, recomputation, optimizer and fp8 recipe.
std::string training_shape(const model::Scenario& s) {
  const model::Workload& w = s.workload;
  std::string shape = " x " + std::to_string(w.microbatches) + " micro-batch" + (w.microbatches > 1 ? "es" : "") +
                      (s.parallelism.dp > 1 ? " per replica" : "") + " (" + step_text(s) + ")";
  if (w.recompute == model::Recompute::kFull) {
    shape += w.recompute_layers > 0
                 ? ", full recomputation of the first " + std::to_string(w.recompute_layers) + " layers of each program"
                 : ", full recomputation";
  }
  if (w.recompute == model::Recompute::kSelective) {
    std::string items;
    for (const std::string& item : model::save_items(w.save)) items += (items.empty() ? "" : " ") + item;
    shape += ", selective recomputation (saves: " + (items.empty() ? std::string("nothing") : items) + ")";
  }
  if (!w.optimizer) shape += ", no optimizer";
  if (w.dtype == model::Dtype::kFp8) shape += ", fp8 " + model::to_string(w.fp8_recipe) + " recipe";
  return shape;
}

// The workload's shape as the scenario line gives it: "batch 8 x seq 4096", an op list's size, and what runs.
std::string workload_shape(const model::Scenario& s) {
  const model::Workload& w = s.workload;
  std::string shape =
      w.phase == model::Phase::kOps ? "(" + std::to_string(w.ops.size()) + " ops)" : "batch " + std::to_string(w.batch);
  if (w.phase == model::Phase::kForward || w.phase == model::Phase::kPrefill || w.phase == model::Phase::kTrain)
    shape += " x seq " + std::to_string(w.seq_len);
  if (w.phase == model::Phase::kTrain) shape += training_shape(s);
  if (w.phase == model::Phase::kDecode) shape += ", context " + std::to_string(w.context_len);
  if (w.phase == model::Phase::kGenerate) {
    shape += ", prompt " + std::to_string(w.context_len) + " + " + std::to_string(w.gen_len) + " new tokens";
  }
  if (w.dtype == model::Dtype::kFp8) shape += ", fp8 GEMMs";
  if (w.cuda_graphs) shape += ", CUDA graphs";
  return shape;
}

// The comparison's first lines: the scenario with its model, shape, parallelism, GPU and profile, then the
// implementation where the scenario sets one.
std::string scenario_heading(const sim::ScenarioRun& run) {
  const auto& s = run.scenario;
  const model::Workload& w = s.workload;
  std::string model;
  if (w.phase != model::Phase::kOps) {
    model = s.arch.name + ", " +
            (w.layers < s.arch.layers
                 ? std::to_string(w.layers) + " of " + std::to_string(s.arch.layers) + " layers simulated"
                 : std::to_string(w.layers) + " layers") +
            ", ";
  }
  std::string out = "scenario " + s.name + ": " + model + model::to_string(w.phase) + " " + workload_shape(s) +
                    ", tp=" + std::to_string(s.parallelism.tp) + pipeline_text(s) + " on " + run.gpu.name +
                    power_limit_text(run.gpu) + " " + s.topology.value + ", profile " + run.profile.name + "\n";
  if (w.implementation.is_set()) out += "implementation " + model::describe(w.implementation) + "\n";
  return out;
}

// The comparison's optional columns: throughput (not for an op list), TTFT, TPOT and memory.
struct ComparisonColumns {
  bool ops = false;
  bool ttft = false;
  bool tpot = false;
  bool memory = false;
};

ComparisonColumns comparison_columns(const sim::ScenarioRun& run) {
  const model::Phase phase = run.scenario.workload.phase;
  ComparisonColumns columns;
  columns.ops = phase == model::Phase::kOps;
  columns.ttft = phase == model::Phase::kPrefill || phase == model::Phase::kGenerate;
  columns.tpot = phase == model::Phase::kDecode || phase == model::Phase::kGenerate;
  columns.memory = run.variants.front().memory.has_value();
  return columns;
}

std::vector<std::string> comparison_headers(const ComparisonColumns& columns) {
  std::vector<std::string> headers = {"time ms", "compute ms", "comm ms", "exposed ms", "overlap", "speedup"};
  if (!columns.ops) headers.insert(headers.end(), {"tok/s/TP", "tok/s/GPU"});
  headers.emplace_back("MFU");
  if (columns.ttft) headers.emplace_back("TTFT ms");
  if (columns.tpot) headers.emplace_back("TPOT ms");
  if (columns.memory) headers.emplace_back("mem GiB");
  return headers;
}

std::string variant_label(const sim::VariantRun& v) {
  return v.variant.chunks_auto ? v.variant.name + " (auto: " + std::to_string(v.variant.chunks) + " chunks)"
                               : v.variant.name;
}

// One variant's cells under comparison_headers; over: set when the variant does not fit the GPU's memory.
std::vector<std::string> comparison_cells(const sim::VariantRun& v, const sim::GpuSpec& gpu,
                                          const ComparisonColumns& columns, bool& over) {
  const sim::Metrics& m = v.metrics;
  std::vector<std::string> cells = {model::format_number("%.3f", m.time_s * 1e3),
                                    model::format_number("%.3f", m.compute_s * 1e3),
                                    model::format_number("%.3f", m.comm_s * 1e3),
                                    model::format_number("%.3f", m.exposed_comm_s * 1e3),
                                    m.comm_s > 0 ? model::format_number("%.1f%%", m.overlap * 100) : std::string("-"),
                                    model::format_number("%.3fx", v.speedup)};
  if (!columns.ops) {
    cells.push_back(model::format_number("%.0f", v.tokens_per_s));
    cells.push_back(model::format_number("%.0f", v.tokens_per_s / sim::replica_gpus(v)));
  }
  cells.push_back(model::format_number("%.1f%%", v.mfu * 100));
  if (columns.ttft) cells.push_back(v.ttft_s ? model::format_number("%.3f", *v.ttft_s * 1e3) : std::string("-"));
  if (columns.tpot) cells.push_back(v.tpot_s ? model::format_number("%.3f", *v.tpot_s * 1e3) : std::string("-"));
  if (columns.memory) {
    const bool fits = sim::fits_memory(v, gpu).value_or(true);
    over = over || !fits;
    cells.push_back(model::format_number("%.1f", v.memory->device_bytes() / sim::kGiB) + (fits ? "" : "!"));
  }
  return cells;
}

}  // namespace

std::string op_times_table(const sim::ScenarioRun& run) {
  std::string out;
  for (const sim::VariantRun& v : run.variants) {
    if (!sim::is_op_list(v.passes.front())) continue;
    const std::vector<sim::OpTiming> ops = sim::op_timings(v.passes.front());
    size_t width = 4;
    for (const sim::OpTiming& t : ops) width = std::max(width, t.name.size());
    out += "ops of " + v.variant.name + " on GPU 0 (every GPU runs the same):\n" + pad("op", width, true) +
           "  stream    start ms    end ms  duration ms\n";
    for (const sim::OpTiming& t : ops) {
      out += pad(t.name, width, true) + "  " + pad(t.stream, 6, true) + ms(t.start_s, 10) + ms(t.end_s, 10) +
             ms(t.end_s - t.start_s, 13) + "\n";
    }
  }
  return out;
}

std::string breakdown_table(const sim::ScenarioRun& run) {
  std::string out;
  for (const sim::VariantRun& v : run.variants) {
    if (v.pipeline) out += step_breakdown(v);
    for (const sim::PassTrace& pass : v.passes) {
      out += "breakdown of " + v.variant.name + " (" + pass.label + (v.pipeline ? ", one micro-batch" : "") +
             "), ms per GPU, op times summed (overlapped work counts in each kind):\n" +
             "module           gemm   attention      memory  communication  exposed comm\n";
      for (const sim::BreakdownRow& b : sim::breakdown(pass)) {
        out += pad(b.module, 9, true) + ms(b.gemm_s, 11) + ms(b.attention_s, 12) + ms(b.memory_s, 12) +
               ms(b.communication_s, 15) + ms(b.exposed_comm_s, 14) + "\n";
      }
      if (run.scenario.workload.phase == model::Phase::kTrain) {
        out += "step split (GPU 0's compute stream, waits included):";
        for (const auto& [stage, seconds] : sim::stage_times(pass)) {
          out += " " + stage + " " + model::format_number("%.3f", seconds * 1e3) + " ms";
        }
        out += "\n";
      }
    }
  }
  return out;
}

std::string critical_path_table(const sim::ScenarioRun& run) {
  std::string out;
  for (const sim::VariantRun& v : run.variants) {
    if (v.pipeline) {
      out += path_text("critical path of " + v.variant.name + "'s step (the pipeline's passes, ", v.metrics.time_s,
                       sim::pipeline_critical_path(*v.pipeline));
    }
    for (const sim::PassTrace& pass : v.passes) {
      out += path_text(
          "critical path of " + v.variant.name + " (" + pass.label + (v.pipeline ? ", one micro-batch, " : ", "),
          pass.timeline.makespan_s, sim::critical_path(pass));
    }
  }
  return out;
}

void add_collective_deviations(const sim::ScenarioRun& run, std::vector<std::string>& notes) {
  for (const sim::VariantRun& v : run.variants) {
    for (const sim::CollectiveRun& c : sim::collectives_run(v.passes)) {
      if (!c.plan.deviation.empty() && std::find(notes.begin(), notes.end(), c.plan.deviation) == notes.end()) {
        notes.push_back(c.plan.deviation);
      }
    }
  }
}

std::string comparison_table(const sim::ScenarioRun& run) {
  std::string out = scenario_heading(run);
  const ComparisonColumns columns = comparison_columns(run);
  std::vector<std::string> headers = {"variant"};
  for (std::string& header : comparison_headers(columns)) headers.push_back(std::move(header));
  bool over = false;
  std::vector<std::vector<std::string>> rows;
  for (const auto& v : run.variants) {
    std::vector<std::string> row = {variant_label(v)};
    for (std::string& cell : comparison_cells(v, run.gpu, columns, over)) row.push_back(std::move(cell));
    rows.push_back(std::move(row));
  }
  out += text_table(headers, rows);
  out += memory_note(run);
  if (over) {
    out += "! above the " + model::format_number("%.2f", sim::usable_hbm_bytes(run.gpu) / sim::kGiB) + " GiB " +
           run.gpu.name + " gives per GPU: this variant does not fit (--require-fit refuses it)\n";
  }
  out += skew_notes(run);
  out += pipeline_notes(run);
  out += data_parallel_notes(run);
  out += moe_notes(run);
  out += exposed_by_dimension_notes(run);
  out += collectives_notes(run);
  return out;
}

}  // namespace tpsim::cli
