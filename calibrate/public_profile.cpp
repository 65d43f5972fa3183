// The public-data fit: GEMM table -> gemm/memory, NCCL AG/RS latencies -> nccl, p2p copy -> copy_engine.
#include "calibrate/public_profile.hpp"

#include <cstdio>

#include "calibrate/csv_table.hpp"
#include "model/input_error.hpp"

namespace tpsim::calibrate {
namespace {

// No public measurement of a cudaMemcpyPeerAsync step latency exists in the data set: assumed.
constexpr double kAssumedCopyEngineStepLatency_s = 3e-6;
// Nor of the host time per launched kernel or NCCL call: assumed, a typical eager-mode figure.
constexpr double kAssumedHostLaunch_s = 4e-6;

// Unidirectional H100 p2p copy bandwidth over its spec: what one copy engine stream reaches.
double copy_engine_efficiency(const std::string& csv_path) {
  const CsvTable table = CsvTable::read_file(csv_path);
  for (size_t r = 0; r < table.rows(); ++r) {
    if (table.at(r, "gpu") == "H100" && table.at(r, "test") == "p2p copy" && table.at(r, "direction") == "uni") {
      return table.number(r, "bw_GBps") / table.number(r, "spec_GBps");
    }
  }
  throw InputError(csv_path + ": no H100 one-direction 'p2p copy' row");
}

std::string number(double value, const char* pattern = "%.6g") {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

}  // namespace

PublicFit fit_public_profile(const std::string& data_dir, const sim::GpuSpec& gpu) {
  PublicFit fit;
  fit.profile.gpu = gpu.name;
  fit.gemm = fit_gemm(read_gemm_table(data_dir + "/gemm_h100_bf16.csv"), gpu, sim::GemmParams{});
  fit.profile.gemm = fit.gemm.params;
  fit.profile.memory.hbm_efficiency = fit.gemm.params.hbm_efficiency;
  fit.profile.memory.overhead_s = fit.gemm.params.overhead_s;
  fit.nccl = fit_ring(read_ring_table(data_dir + "/collectives_h100_latency.csv", "nccl"), gpu.nvlink_Bps);
  fit.profile.nccl = fit.nccl.params;
  fit.one_shot =
      fit_one_shot(read_small_allreduce_table(data_dir + "/small_allreduce_h100.csv", "ca_1stage"), gpu.nvlink_Bps);
  fit.profile.one_shot = fit.one_shot.params;
  fit.profile.host_launch_s = kAssumedHostLaunch_s;
  // NCCL runs NVLS from 2 MiB on this sweep (RING/LL below), per its source.
  fit.nvls = fit_nvls(read_allreduce_sweep(data_dir + "/allreduce_h200_busbw.csv", 2.0 * 1024 * 1024), gpu.nvlink_Bps);
  fit.profile.nvls = fit.nvls.params;
  fit.copy_engine_efficiency = copy_engine_efficiency(data_dir + "/p2p_bandwidth.csv");
  fit.profile.copy_engine.link_efficiency = fit.copy_engine_efficiency;
  fit.profile.copy_engine.step_latency_s = kAssumedCopyEngineStepLatency_s;
  return fit;
}

std::string profile_yaml(const PublicFit& fit) {
  const sim::CostProfile& p = fit.profile;
  std::string y;
  y += "# Default cost profile for " + p.gpu + ", written by `tpsim calibrate public calibrate/data/public --gpu " +
       p.gpu + "`.\n";
  y += "# Fitted on H100 SXM measurements (GH100 die); fractions of peak carry over to H200 and H800.\n";
  y += "# Fitted values carry their data and error; the others are stated with their source.\n";
  y += "gpu: " + p.gpu + "\n";
  y += "gemm:\n";
  y += "  efficiency: " + number(p.gemm.efficiency) + "\n";
  y += "  hbm_efficiency: " + number(p.gemm.hbm_efficiency) + "\n";
  y += "  overhead_us: " + number(p.gemm.overhead_s * 1e6) + "\n";
  y += "  tile_m: " + std::to_string(p.gemm.tile_m) + "\n";
  y += "  tile_n: " + std::to_string(p.gemm.tile_n) + "\n";
  y += "  small_m_tile_m: " + std::to_string(p.gemm.small_m_tile_m) + "\n";
  y += "  min_k_per_split: " + std::to_string(p.gemm.min_k_per_split) + "\n";
  y += "  source: \"tile sizes are the 128x256 / 64x256 CTA tiles of Hopper BF16 GEMM kernels (assumed)\"\n";
  y += "  fit: {data: gemm_h100_bf16.csv, points: " + std::to_string(fit.gemm.points) +
       ", rms_log_error: " + number(fit.gemm.rms_log_error, "%.4f") +
       ", max_abs_error_pct: " + number(fit.gemm.max_abs_error_pct, "%.1f") + "}\n";
  y += "memory:\n";
  y += "  hbm_efficiency: " + number(p.memory.hbm_efficiency) + "\n";
  y += "  overhead_us: " + number(p.memory.overhead_s * 1e6) + "\n";
  y += "  source: \"the memory-bound GEMM fit above (skinny M=1..16 rows)\"\n";
  y += "attention:\n";
  y += "  efficiency: " + number(p.attention.efficiency) + "\n";
  y += "  source: \"FlashAttention-3 (Shah et al. 2024) reports about 600 TFLOP/s causal BF16 forward on H100 SXM, "
       "head dim 128 (not fitted: no attention data in calibrate/data/public)\"\n";
  y += "nccl:\n";
  y += "  step_latency_us: " + number(p.nccl.step_latency_s * 1e6) + "\n";
  y += "  link_efficiency: " + number(p.nccl.link_efficiency) + "\n";
  y += "  sms: " + std::to_string(p.nccl_sms) + "\n";
  y += "  source: \"sms is assumed (NCCL ring channels on NVSwitch; measure with real/ overlap)\"\n";
  y += "  fit: {data: collectives_h100_latency.csv all-gather and reduce-scatter (nccl, 8 ranks), points: " +
       std::to_string(fit.nccl.points) + ", max_abs_error_pct: " + number(fit.nccl.max_abs_error_pct, "%.1f") + "}\n";
  y += "copy_engine:\n";
  y += "  step_latency_us: " + number(p.copy_engine.step_latency_s * 1e6) + "\n";
  y += "  link_efficiency: " + number(p.copy_engine.link_efficiency) + "\n";
  y += "  source: \"efficiency = H100 p2p copy 380 GB/s over 450 GB/s (p2p_bandwidth.csv); step latency assumed "
       "(no public measurement; measure with real/ memcpy)\"\n";
  y += "one_shot:\n";
  y += "  step_latency_us: " + number(p.one_shot.step_latency_s * 1e6) + "\n";
  y += "  link_efficiency: " + number(p.one_shot.link_efficiency) + "\n";
  y += "  max_bytes: " + number(p.one_shot_max_bytes, "%.0f") + "\n";
  y += "  source: \"max_bytes is vLLM's custom all-reduce default limit of 8 MiB\"\n";
  y += "  fit: {data: small_allreduce_h100.csv ca_1stage (vLLM custom all-reduce, 4 and 6 ranks), points: " +
       std::to_string(fit.one_shot.points) + ", max_abs_error_pct: " + number(fit.one_shot.max_abs_error_pct, "%.1f") +
       "}\n";
  y += "nvls:\n";
  y += "  step_latency_us: " + number(p.nvls->step_latency_s * 1e6) + "\n";
  y += "  link_efficiency: " + number(p.nvls->link_efficiency) + "\n";
  y += "  source: \"latency includes the per-call overhead of the torch benchmark that measured it\"\n";
  y += "  fit: {data: allreduce_h200_busbw.csv from 2 MiB (NVLS/SIMPLE per NCCL, 8 x H200), points: " +
       std::to_string(fit.nvls.points) + ", max_abs_error_pct: " + number(fit.nvls.max_abs_error_pct, "%.1f") + "}\n";
  y += "launch:\n";
  y += "  host_us: " + number(p.host_launch_s * 1e6) + "\n";
  y += "  source: \"assumed (eager-mode launch of one kernel or NCCL call); workload.cuda_graphs removes it\"\n";
  return y;
}

}  // namespace tpsim::calibrate
