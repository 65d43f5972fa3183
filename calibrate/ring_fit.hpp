// Fits a transport's step latency and link efficiency to ring collective times:
// t = (n - 1) * (latency + S / (n * link_Bps * efficiency)), linear in the tensor size S.
#pragma once

#include <string>
#include <vector>

#include "sim/profile.hpp"

namespace tpsim::calibrate {

struct RingSample {
  int ranks = 0;
  double tensor_bytes = 0;  // the full (gathered / unscattered) tensor
  double seconds = 0;
};

struct RingFit {
  sim::TransportParams params;
  double max_abs_error_pct = 0;
  size_t points = 0;
};

// Weighted least squares on relative error; all samples must share one rank count.
RingFit fit_ring(const std::vector<RingSample>& samples, double link_Bps);

// Fits a one-shot all-reduce: t = latency + (n - 1) * S / (link_Bps * efficiency), each rank
// reading the whole tensor S from each of its n - 1 peers in one step. Samples may mix rank counts.
RingFit fit_one_shot(const std::vector<RingSample>& samples, double link_Bps);

// Fits NVLS all-reduce: t = latency + S / (link_Bps * efficiency), each GPU moving the tensor once
// each way through the switch.
RingFit fit_nvls(const std::vector<RingSample>& samples, double link_Bps);

// All-reduce rows of a busbw sweep (columns ranks, message_bytes, algbw_GBps) from `min_bytes` up,
// as timed samples (time = bytes / algbw).
std::vector<RingSample> read_allreduce_sweep(const std::string& csv_path, double min_bytes);

// Rows of a small all-reduce table (columns ranks, message_bytes, implementation, time_us) whose
// implementation is `implementation` (vLLM's custom all-reduce one-stage kernel: ca_1stage).
std::vector<RingSample> read_small_allreduce_table(const std::string& csv_path, const std::string& implementation);

// All-gather and reduce-scatter rows of an NCCL latency table (columns ranks, message_bytes,
// collective, implementation, time_us) whose implementation is `implementation`.
std::vector<RingSample> read_ring_table(const std::string& csv_path, const std::string& implementation);

}  // namespace tpsim::calibrate
