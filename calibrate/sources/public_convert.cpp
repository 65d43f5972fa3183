// Row-by-row conversion: times from TFLOP/s or GB/s where the table gives rates, algorithms where
// the source states them (NCCL's choice per size on the H200 sweep, vLLM's one-stage custom
// all-reduce as one-shot) or where they can be inferred (NCCL all-reduces from 2 MiB on NVSwitch
// Hopper as NVLS, marked so), TokenWeave's own multimem kernels as "multimem", "unknown" otherwise.
#include "calibrate/sources/public_convert.hpp"

#include "base/input_error.hpp"
#include "calibrate/sources/csv_table.hpp"
#include "model/graph/op.hpp"

namespace tpsim::calibrate {
namespace {

using Json = nlohmann::ordered_json;

std::string gpu_name(const std::string& printed) {
  if (printed.rfind("H200", 0) == 0) return "h200-sxm";
  if (printed.rfind("H100", 0) == 0) return "h100-sxm";
  if (printed.rfind("B200", 0) == 0) return "b200";
  return printed;
}

Json provenance(const CsvTable& table, size_t row, const std::string& file, const std::string& tool_column) {
  Json p;
  p["source"] = table.at(row, "source");
  if (!tool_column.empty()) p["tool"] = table.at(row, tool_column);
  p["converted_from"] = file + ":" + std::to_string(row + 2);
  p["spread"] = "not stated by the source: p10 = p90 = median";
  return p;
}

Measurement timed(Measurement m, double seconds) {
  m.median_s = m.p10_s = m.p90_s = seconds;
  return m;
}

// How a table's `tool` timed its collectives: one call at a time through torch.distributed where it names torch
// (all_reduce_bench.py as these sweeps ran it: an event before and after one dist.all_reduce on an idle GPU), else
// as nccl-tests times them (nccl-tests, or not stated).
std::string timed_as_by(const std::string& tool) {
  return tool.find("torch") != std::string::npos ? kTimedAsTorch : kTimedAsNcclTests;
}

// TokenWeave's collective benchmark (artifact/figure_4_6/bench.py, benchmark_with_event): 100 calls queued behind a
// 2e7-cycle torch.cuda._sleep, each between two CUDA events, the median taken: the host runs ahead of the GPU, so
// each time is the device's (its L2 flushed before each call).
constexpr const char* kTokenWeaveTiming =
    "graph: TokenWeave's benchmark_with_event (artifact/figure_4_6/bench.py) queues its 100 calls behind a "
    "2e7-cycle torch.cuda._sleep and times each between two CUDA events: the device's time, the host's hidden";
// vLLM's communicator benchmark (benchmarks/kernels/benchmark_device_communicators.py, vllm-project/vllm#24111)
// captures its calls in a CUDA graph and times the graph's replays.
constexpr const char* kVllmBenchmarkTiming =
    "graph: vLLM's benchmark_device_communicators.py captures the calls in a CUDA graph and times its replays";

// A collective measurement of row `r` with the fields every collective table has.
Measurement collective_row(const CsvTable& t, size_t r, const std::string& file, const std::string& tool_column,
                           const std::string& collective) {
  Measurement m;
  m.kind = "collective";
  m.gpu = gpu_name(t.at(r, "gpu"));
  m.collective = collective;
  m.ranks = t.integer(r, "ranks");
  m.bytes = t.number(r, "message_bytes");
  m.provenance = provenance(t, r, file, tool_column);
  return m;
}

std::vector<Measurement> gemms(const std::string& dir, const std::string& file) {
  const CsvTable t = CsvTable::read_file(dir + "/" + file);
  std::vector<Measurement> out;
  for (size_t r = 0; r < t.rows(); ++r) {
    Measurement m;
    m.kind = "gemm";
    m.gpu = gpu_name(t.at(r, "gpu"));
    m.m = t.integer(r, "m");
    m.n = t.integer(r, "n");
    m.k = t.integer(r, "k");
    m.provenance = provenance(t, r, file, "");
    m.provenance["notes"] = t.at(r, "notes");
    const double flops = model::gemm_flops({m.m, m.n, m.k});
    out.push_back(timed(m, flops / (t.number(r, "tflops") * 1e12)));
  }
  return out;
}

std::vector<Measurement> tokenweave(const std::string& dir) {
  const std::string file = "collectives_h100_latency.csv";
  const CsvTable t = CsvTable::read_file(dir + "/" + file);
  std::vector<Measurement> out;
  for (size_t r = 0; r < t.rows(); ++r) {
    Measurement m = collective_row(t, r, file, "implementation", t.at(r, "collective"));
    if (t.at(r, "implementation") == "multimem") {
      m.algorithm = "multimem";  // TokenWeave's own kernels, not NCCL: the multimem sections' fit
    } else if (m.collective == "allreduce" && m.bytes >= 2.0 * 1024 * 1024) {
      m.algorithm = "nvls";
      m.provenance["algorithm"] =
          "inferred: NCCL runs NVLS for all-reduces from 2 MiB on 8 NVSwitch Hopper GPUs (stated for the H200 sweep)";
    } else if (m.collective == "allreduce") {
      m.algorithm = "ring";
      m.provenance["algorithm"] =
          "inferred: NCCL runs rings (LL) for all-reduces up to 1 MiB on 8 NVSwitch Hopper GPUs (stated for the H200 "
          "sweep)";
    } else {
      m.algorithm = "unknown";
    }
    // Both series: the device's time, NCCL's calls issued through torch.distributed.
    m.timed_as = kTimedAsGraph;
    m.provenance["timed_as"] = kTokenWeaveTiming;
    out.push_back(timed(m, t.number(r, "time_us") * 1e-6));
  }
  return out;
}

std::vector<Measurement> h200_sweep(const std::string& dir) {
  const std::string file = "allreduce_h200_busbw.csv";
  const CsvTable t = CsvTable::read_file(dir + "/" + file);
  std::vector<Measurement> out;
  for (size_t r = 0; r < t.rows(); ++r) {
    Measurement m = collective_row(t, r, file, "tool", "allreduce");
    // The source: NCCL runs RING/LL up to 1 MiB and NVLS/SIMPLE from 2 MiB on this sweep.
    m.algorithm = m.bytes <= 1024.0 * 1024 ? "ring" : "nvls";
    m.timed_as = timed_as_by(t.at(r, "tool"));
    out.push_back(timed(m, m.bytes / (t.number(r, "algbw_GBps") * 1e9)));
  }
  return out;
}

// Multi-node all-reduce busbw: ranks over `nodes` nodes; rows without a size (the 256-GPU IB row) are
// left out. Ring and NVLSTree are as the source names them; elsewhere the algorithm is not stated.
std::vector<Measurement> multinode_allreduce(const std::string& dir) {
  const std::string file = "allreduce_multinode_busbw.csv";
  const CsvTable t = CsvTable::read_file(dir + "/" + file);
  std::vector<Measurement> out;
  for (size_t r = 0; r < t.rows(); ++r) {
    if (t.at(r, "message_bytes").empty() || t.at(r, "bw_kind") != "busbw") continue;
    Measurement m = collective_row(t, r, file, "tool", t.at(r, "collective"));
    m.nodes = t.integer(r, "nodes");
    const std::string algorithm = t.at(r, "algorithm");
    m.algorithm = algorithm == "Ring" ? "ring" : algorithm == "NVLSTree" ? "nvls_tree" : "unknown";
    if (m.nodes == 1 && m.algorithm == "unknown" && m.bytes >= 2.0 * 1024 * 1024) {
      m.algorithm = "nvls";
      m.provenance["algorithm"] =
          "inferred: the same tool and NCCL (2.27.7) run NVLS for all-reduces from 2 MiB on 8 NVSwitch H200s (stated "
          "for the H200 sweep); 16 GiB at 846 GB/s busbw is beyond the 682 GB/s of this B200 node's ring "
          "(nvls_vs_ring_b200.csv)";
    } else if (m.nodes == 1 && m.algorithm == "unknown") {
      m.algorithm = "ring";
      m.provenance["algorithm"] =
          "inferred: the same tool and NCCL (2.27.7) run rings (LL) for all-reduces up to 1 MiB on 8 NVSwitch H200s "
          "(stated for the H200 sweep)";
    }
    m.provenance["notes"] = t.at(r, "notes");
    m.timed_as = timed_as_by(t.at(r, "tool"));
    const double algbw_GBps = t.number(r, "bw_GBps") / bus_factor(m.collective, m.ranks);
    out.push_back(timed(m, m.bytes / (algbw_GBps * 1e9)));
  }
  return out;
}

// NVLS on / off on one 8-GPU node (16 GiB nccl-tests rows and an 8 GiB ramp over 4..8 GPUs): the
// algorithm NCCL ran, as the source names it; where NCCL ran a ring with NVLS enabled, the point
// says so (details.nvls_declined), which sets the profile's nvls.min_ranks.
std::vector<Measurement> nvls_vs_ring(const std::string& dir, const std::string& file) {
  const CsvTable t = CsvTable::read_file(dir + "/" + file);
  std::vector<Measurement> out;
  for (size_t r = 0; r < t.rows(); ++r) {
    Measurement m = collective_row(t, r, file, "tool", t.at(r, "collective"));
    const std::string used = t.at(r, "algorithm_used");
    m.algorithm = used == "NVLS" ? "nvls" : used.rfind("Ring", 0) == 0 ? "ring" : "unknown";
    m.provenance["config"] = t.at(r, "config");
    m.provenance["notes"] = t.at(r, "notes");
    if (t.at(r, "config") == "NVLS enabled" && m.algorithm == "ring") m.details["nvls_declined"] = true;
    m.timed_as = timed_as_by(t.at(r, "tool"));
    out.push_back(timed(m, m.bytes / (t.number(r, "busbw_GBps") / bus_factor(m.collective, m.ranks) * 1e9)));
  }
  return out;
}

std::vector<Measurement> small_allreduce(const std::string& dir) {
  const std::string file = "small_allreduce_h100.csv";
  const CsvTable t = CsvTable::read_file(dir + "/" + file);
  std::vector<Measurement> out;
  for (size_t r = 0; r < t.rows(); ++r) {
    // Rows whose GPU or message size the source does not state are left out.
    if (t.at(r, "gpu") != "H100" || t.at(r, "message_bytes").empty()) continue;
    Measurement m = collective_row(t, r, file, "implementation", "allreduce");
    // vLLM's custom all-reduce in one stage (one-shot) or two (two-shot), PyTorch's symmetric-memory
    // two-shot and multimem kernels; pynccl is NCCL, whose algorithm the source does not say.
    const std::string implementation = t.at(r, "implementation");
    m.algorithm = implementation == "ca_1stage"                                            ? "one_shot"
                  : implementation == "ca_2stage" || implementation == "symm_mem_two_shot" ? "two_shot"
                  : implementation == "symm_mem_multimem"                                  ? "multimem"
                                                                                           : "unknown";
    m.timed_as = kTimedAsGraph;
    m.provenance["timed_as"] = kVllmBenchmarkTiming;
    out.push_back(timed(m, t.number(r, "time_us") * 1e-6));
  }
  return out;
}

std::vector<Measurement> peer_copies(const std::string& dir) {
  const std::string file = "p2p_bandwidth.csv";
  const CsvTable t = CsvTable::read_file(dir + "/" + file);
  std::vector<Measurement> out;
  for (size_t r = 0; r < t.rows(); ++r) {
    if (t.at(r, "test") != "p2p copy" || t.at(r, "direction") != "uni" || t.at(r, "spec_GBps").empty()) continue;
    Measurement m;
    m.kind = "memcpy";
    m.gpu = gpu_name(t.at(r, "gpu"));
    m.path = "peer";
    // The source gives a bandwidth, not a size: 1 GiB is chosen and the time follows from it.
    m.bytes = 1024.0 * 1024 * 1024;
    m.spec_GBps = t.number(r, "spec_GBps");
    m.provenance = provenance(t, r, file, "tool");
    m.provenance["bytes"] = "not stated by the source; 1 GiB chosen, time = bytes / reported bandwidth";
    out.push_back(timed(m, m.bytes / (t.number(r, "bw_GBps") * 1e9)));
  }
  return out;
}

// The copy-engine pull of TorchTitan's published async-TP trace (async_tp_trace_layer.csv, its `rate` row): one
// shard pulled back to back while all 8 ranks pull, read off the profiler screenshot (+-0.07 ms). The trace does
// not state its batch or its bytes: batch 16 is the one whose NCCL all-gather the h100-sxm ring fit predicts
// closest to the trace's (5.62 ms against 5.49 and 5.35; batch 12 gives 4.22), so one shard is 16 x 8192 tokens /
// 8 ranks x 8192 hidden in bf16. The hosts' 96 GB H100s have h100-sxm's NVLink 4 and copy engines (gpu_specs.csv).
std::vector<Measurement> trace_pulls(const std::string& dir) {
  const std::string file = "async_tp_trace_layer.csv";
  const CsvTable t = CsvTable::read_file(dir + "/" + file);
  constexpr double kScreenshotResolution_s = 0.07e-3;
  std::vector<Measurement> out;
  for (size_t r = 0; r < t.rows(); ++r) {
    if (t.at(r, "kind") != "rate" || t.at(r, "kernel_or_block").rfind("copy-engine pull", 0) != 0) continue;
    Measurement m;
    m.kind = "memcpy";
    m.gpu = "h100-sxm";
    m.path = "peer_all_ranks";
    m.ranks = 8;
    m.bytes = 16.0 * 8192 / 8 * 8192 * 2;
    m.spec_GBps = 450;
    m.provenance["source"] = "TorchTitan's published async-TP profiler trace of one Llama-3-70B layer";
    m.provenance["converted_from"] = file + ":" + std::to_string(r + 2);
    m.provenance["notes"] = t.at(r, "notes");
    m.provenance["gpu"] = "the 96 GB HBM2e H100 of TorchTitan's hosts: h100-sxm's NVLink 4 (450 GB/s) and copy engines";
    m.provenance["bytes"] =
        "not stated by the trace: one shard of batch 16 x 8192 tokens / 8 ranks x 8192 hidden in bf16, the batch "
        "whose NCCL all-gather the h100-sxm ring fit predicts at 5.62 ms against the trace's 5.49 and 5.35";
    m.provenance["spread"] = "the screenshot's resolution: p10 and p90 at the median -+0.07 ms";
    const double seconds = t.number(r, "duration_ms") * 1e-3;
    m.median_s = seconds;
    m.p10_s = seconds - kScreenshotResolution_s;
    m.p90_s = seconds + kScreenshotResolution_s;
    out.push_back(m);
  }
  if (out.empty()) throw InputError(dir + "/" + file + ": no row of kind \"rate\" for a copy-engine pull");
  return out;
}

// gpt-fast's README table: batch 1, the 5-token prompt, its default 200 new tokens, bf16, compiled
// (CUDA graphs), TP through PyTorch's intra-node all-reduce (ENABLE_INTRA_NODE_COMM=1: a one-shot kernel
// for these sizes), on A100-80GB at 330 W. The time is the whole generate's: 200 tokens / tokens/s.
std::vector<Measurement> gpt_fast_decode(const std::string& dir) {
  const std::string file = "decode_tp_gpt_fast.csv";
  const CsvTable t = CsvTable::read_file(dir + "/" + file);
  std::vector<Measurement> out;
  for (size_t r = 0; r < t.rows(); ++r) {
    Measurement m;
    m.kind = "decode";
    m.gpu = "a100-sxm";
    const std::string printed = t.at(r, "model");
    m.model = printed == "Llama-2-7B" ? "llama-2-7b" : printed == "Llama-2-70B" ? "llama-2-70b" : printed;
    m.ranks = t.integer(r, "gpus");
    m.batch = 1;
    m.context_len = 5;
    m.gen_len = 200;
    m.implementation = "gpt-fast";
    m.collective = m.ranks > 1 ? "one_shot" : "nccl";
    m.power_limit_W = 330;
    m.provenance = provenance(t, r, file, "");
    m.provenance["source"] = t.at(0, "source");  // later rows say "same"
    m.provenance["notes"] = t.at(0, "notes");
    m.provenance["settings"] =
        "batch 1, 5-token prompt and 200 new tokens (generate.py's defaults), implementation gpt-fast, all-reduce "
        "as one-shot (PyTorch's intra-node comm), topology nvswitch standing for the hybrid cube mesh";
    out.push_back(timed(m, static_cast<double>(m.gen_len) / t.number(r, "tokens_per_s")));
  }
  return out;
}

}  // namespace

std::map<std::string, std::vector<Measurement>> convert_public_tables(const std::string& dir) {
  std::map<std::string, std::vector<Measurement>> converted = {
      {"gemm_h100_bf16.jsonl", gemms(dir, "gemm_h100_bf16.csv")},
      {"gemm_b200_bf16.jsonl", gemms(dir, "gemm_b200_bf16.csv")},
      {"collectives_h100_latency.jsonl", tokenweave(dir)},
      {"allreduce_h200_busbw.jsonl", h200_sweep(dir)},
      {"allreduce_multinode_busbw.jsonl", multinode_allreduce(dir)},
      {"nvls_vs_ring_h200.jsonl", nvls_vs_ring(dir, "nvls_vs_ring_h200.csv")},
      {"nvls_vs_ring_b200.jsonl", nvls_vs_ring(dir, "nvls_vs_ring_b200.csv")},
      {"small_allreduce_h100.jsonl", small_allreduce(dir)},
      {"p2p_bandwidth.jsonl", peer_copies(dir)},
      {"async_tp_trace_pulls.jsonl", trace_pulls(dir)},
      {"decode_tp_gpt_fast.jsonl", gpt_fast_decode(dir)}};
  // What is written must read back: the measurement reader's checks (ranges, finite times) apply.
  for (const auto& [name, measurements] : converted) {
    for (size_t i = 0; i < measurements.size(); ++i) {
      parse_measurement(to_json(measurements[i]).dump(), dir + ": " + name + " point " + std::to_string(i + 1));
    }
  }
  return converted;
}

}  // namespace tpsim::calibrate
