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

}  // namespace tpsim::calibrate
