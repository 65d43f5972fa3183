// Fits a default cost profile for an NVLink4 Hopper GPU from the public tables in calibrate/data/public.
#pragma once

#include <string>

#include "calibrate/gemm_fit.hpp"
#include "calibrate/ring_fit.hpp"
#include "sim/gpu_spec.hpp"

namespace tpsim::calibrate {

struct PublicFit {
  sim::CostProfile profile;
  GemmFit gemm;
  RingFit nccl;
  RingFit one_shot;
  RingFit nvls;
  double copy_engine_efficiency = 0;
};

// Reads gemm_h100_bf16.csv, collectives_h100_latency.csv and p2p_bandwidth.csv from `data_dir`.
PublicFit fit_public_profile(const std::string& data_dir, const sim::GpuSpec& gpu);

// The profile as YAML, each fitted value with its data and fit error.
std::string profile_yaml(const PublicFit& fit);

}  // namespace tpsim::calibrate
