// Builds the validation tables from the public CSVs and the same fitters the default profiles use.
#include "calibrate/public_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "calibrate/csv_table.hpp"
#include "calibrate/public_profile.hpp"
#include "model/presets.hpp"
#include "model/program_builder.hpp"
#include "model/yaml_reader.hpp"
#include "sim/comm_plan.hpp"
#include "sim/isolated_run.hpp"

namespace tpsim::calibrate {
namespace {

std::string fmt(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

sim::GpuSpec gpu_preset(const std::string& name) {
  const model::YamlReader reader("presets/gpus/" + name + ".yaml");
  return sim::read_gpu_spec(reader, reader.parse_text(std::string(*model::find_preset("gpus", name, "yaml"))));
}

template <typename T>
std::vector<T> every_other(const std::vector<T>& rows, size_t parity) {
  std::vector<T> out;
  for (size_t i = parity; i < rows.size(); i += 2) out.push_back(rows[i]);
  return out;
}

// Error statistics of one table column.
struct ErrorStats {
  double max_abs_pct = 0;
  double sum_abs_pct = 0;
  size_t count = 0;
  void add(double pct) {
    max_abs_pct = std::max(max_abs_pct, std::abs(pct));
    sum_abs_pct += std::abs(pct);
    ++count;
  }
  std::string summary() const {
    return "mean |error| " + fmt("%.1f%%", count ? sum_abs_pct / count : 0) + ", max " + fmt("%.1f%%", max_abs_pct);
  }
};

double simulate_collective(const sim::CostModel& cost, int ranks, model::CollectiveKind kind, double bytes,
                           model::CollectiveAlgorithm algorithm) {
  model::LayerGraph graph(ranks);
  model::ProgramBuilder builder(graph, 2.0);
  builder.set_collective_algorithm(algorithm);
  builder.collective("c", kind, bytes, "", {});
  return sim::simulate(graph, cost).makespan_s;
}

// A profile fitted on every row (parity < 0) or on the even rows of every table (parity 0).
sim::CostProfile fitted_profile(const std::string& dir, const sim::GpuSpec& gpu, bool held_out) {
  PublicFit fit = fit_public_profile(dir, gpu);
  if (!held_out) return fit.profile;
  sim::CostProfile p = fit.profile;
  p.gemm = fit_gemm(every_other(read_gemm_table(dir + "/gemm_h100_bf16.csv"), 0), gpu, sim::GemmParams{}).params;
  p.nccl =
      fit_ring(every_other(read_ring_table(dir + "/collectives_h100_latency.csv", "nccl"), 0), gpu.nvlink_Bps).params;
  p.nvls = fit_nvls(every_other(read_allreduce_sweep(dir + "/allreduce_h200_busbw.csv", 2.0 * 1024 * 1024), 0),
                    gpu.nvlink_Bps)
               .params;
  return p;
}

std::string gemm_table(const std::string& dir, const sim::CostModel& all, const sim::CostModel& even) {
  std::string out = "| M | N | K | measured TFLOP/s | predicted | error | held-out prediction | error |\n";
  out += "|---|---|---|---|---|---|---|---|\n";
  ErrorStats in_sample, held;
  const std::vector<GemmSample> rows = read_gemm_table(dir + "/gemm_h100_bf16.csv");
  for (size_t i = 0; i < rows.size(); ++i) {
    const GemmSample& s = rows[i];
    const double flops = 2.0 * s.shape.m * static_cast<double>(s.shape.n) * static_cast<double>(s.shape.k);
    const double bytes =
        2.0 * static_cast<double>(s.shape.m * s.shape.k + s.shape.k * s.shape.n + s.shape.m * s.shape.n);
    const double measured = flops / s.seconds / 1e12;
    const double a = flops / all.gemm_seconds(s.shape, bytes) / 1e12;
    const double b = flops / even.gemm_seconds(s.shape, bytes) / 1e12;
    const double ea = 100 * (a / measured - 1), eb = 100 * (b / measured - 1);
    in_sample.add(ea);
    const bool odd = i % 2 == 1;
    if (odd) held.add(eb);
    out += "| " + std::to_string(s.shape.m) + " | " + std::to_string(s.shape.n) + " | " + std::to_string(s.shape.k) +
           " | " + fmt("%.1f", measured) + " | " + fmt("%.1f", a) + " | " + fmt("%+.1f%%", ea) + " | " +
           (odd ? fmt("%.1f", b) + " | " + fmt("%+.1f%%", eb) : std::string("(fitted) | ")) + " |\n";
  }
  return out + "\nIn-sample: " + in_sample.summary() + ". Held-out (odd rows): " + held.summary() + ".\n";
}

std::string nccl_table(const std::string& dir, const sim::CostModel& all, const sim::CostModel& even) {
  const CsvTable table = CsvTable::read_file(dir + "/collectives_h100_latency.csv");
  std::string out = "| collective | bytes | measured us | predicted us (algorithm) | error | held-out | error |\n";
  out += "|---|---|---|---|---|---|---|\n";
  ErrorStats in_sample, held;
  size_t ring_row = 0;  // index among the all-gather / reduce-scatter rows the ring fit uses
  for (size_t r = 0; r < table.rows(); ++r) {
    if (table.at(r, "implementation") != "nccl") continue;
    const std::string& name = table.at(r, "collective");
    const model::CollectiveKind kind = name == "allreduce"   ? model::CollectiveKind::kAllReduce
                                       : name == "allgather" ? model::CollectiveKind::kAllGather
                                                             : model::CollectiveKind::kReduceScatter;
    const double bytes = table.number(r, "message_bytes");
    const double measured = table.number(r, "time_us");
    const double a = 1e6 * simulate_collective(all, 8, kind, bytes, model::CollectiveAlgorithm::kAuto);
    const double b = 1e6 * simulate_collective(even, 8, kind, bytes, model::CollectiveAlgorithm::kAuto);
    model::Op op;
    op.kind = model::OpKind::kCollective;
    op.collective = kind;
    op.tensor_bytes = bytes;
    op.group_size = 8;
    const std::string algorithm = model::to_string(sim::plan_communication(op, 8, all).algorithm);
    const double ea = 100 * (a / measured - 1), eb = 100 * (b / measured - 1);
    in_sample.add(ea);
    // All-reduce rows are never fitted; the ring fit uses the even all-gather / reduce-scatter rows.
    const bool held_out = kind == model::CollectiveKind::kAllReduce || (ring_row++ % 2 == 1);
    if (held_out) held.add(eb);
    out += "| " + name + " | " + fmt("%.0f", bytes) + " | " + fmt("%.1f", measured) + " | " + fmt("%.1f", a) + " (" +
           algorithm + ") | " + fmt("%+.1f%%", ea) + " | " +
           (held_out ? fmt("%.1f", b) + " | " + fmt("%+.1f%%", eb) : std::string("(fitted) | ")) + " |\n";
  }
  return out + "\nIn-sample: " + in_sample.summary() + ". Held-out: " + held.summary() + ".\n";
}

std::string busbw_table(const std::string& dir, const sim::CostModel& all, const sim::CostModel& even) {
  const CsvTable table = CsvTable::read_file(dir + "/allreduce_h200_busbw.csv");
  std::string out = "| bytes | measured busbw GB/s | predicted (algorithm) | error | held-out | error |\n";
  out += "|---|---|---|---|---|---|\n";
  ErrorStats in_sample, held;
  size_t nvls_row = 0;
  for (size_t r = 0; r < table.rows(); ++r) {
    const double bytes = table.number(r, "message_bytes");
    const double measured = table.number(r, "busbw_GBps");
    const double factor = 2.0 * 7 / 8;
    const double a =
        bytes /
        simulate_collective(all, 8, model::CollectiveKind::kAllReduce, bytes, model::CollectiveAlgorithm::kAuto) / 1e9 *
        factor;
    const double b =
        bytes /
        simulate_collective(even, 8, model::CollectiveKind::kAllReduce, bytes, model::CollectiveAlgorithm::kAuto) /
        1e9 * factor;
    model::Op op;
    op.kind = model::OpKind::kCollective;
    op.tensor_bytes = bytes;
    op.group_size = 8;
    const std::string algorithm = model::to_string(sim::plan_communication(op, 8, all).algorithm);
    const double ea = 100 * (a / measured - 1), eb = 100 * (b / measured - 1);
    in_sample.add(ea);
    const bool fitted_row = bytes >= 2.0 * 1024 * 1024 && (nvls_row++ % 2 == 0);
    if (!fitted_row) held.add(eb);
    out += "| " + fmt("%.0f", bytes) + " | " + fmt("%.2f", measured) + " | " + fmt("%.2f", a) + " (" + algorithm +
           ") | " + fmt("%+.1f%%", ea) + " | " +
           (fitted_row ? std::string("(fitted) | ") : fmt("%.2f", b) + " | " + fmt("%+.1f%%", eb)) + " |\n";
  }
  return out + "\nIn-sample: " + in_sample.summary() + ". Held-out: " + held.summary() + ".\n";
}

}  // namespace

std::string public_validation_report(const std::string& data_dir) {
  const sim::GpuSpec h100 = gpu_preset("h100-sxm");
  const sim::GpuSpec h200 = gpu_preset("h200-sxm");
  const sim::CostModel h100_all(h100, fitted_profile(data_dir, h100, false));
  const sim::CostModel h100_even(h100, fitted_profile(data_dir, h100, true));
  const sim::CostModel h200_all(h200, fitted_profile(data_dir, h100, false));
  const sim::CostModel h200_even(h200, fitted_profile(data_dir, h100, true));
  std::string out = "## BF16 GEMM on H100 SXM (gemm_h100_bf16.csv)\n\n" + gemm_table(data_dir, h100_all, h100_even);
  out += "\n## NCCL collectives on 8 x H100 (collectives_h100_latency.csv, NCCL rows)\n\n" +
         nccl_table(data_dir, h100_all, h100_even);
  out += "\n## All-reduce bus bandwidth on 8 x H200 (allreduce_h200_busbw.csv)\n\n" +
         busbw_table(data_dir, h200_all, h200_even);
  return out;
}

}  // namespace tpsim::calibrate
