// Carries a profile fitted on one GPU's measurements over to another GPU preset (`tpsim calibrate
// --gpu` other than `--measured-on`), using what the two GPUs' published figures say.
#pragma once

#include <optional>
#include <string>

#include "calibrate/profile/profile_fit.hpp"
#include "sim/cost/gpu_spec.hpp"

namespace tpsim::calibrate {

// A GPU's max-achievable-matmul fractions of its dense peak (gemm_mamf.csv), in percent.
struct MamfFractions {
  double bf16_pct = 0;
  std::optional<double> fp8_pct;  // absent: not published, or no fp8 tensor cores
};
// The published fractions of a GPU preset, if any.
std::optional<MamfFractions> mamf_fractions(const std::string& gpu_name);

// Fractions of peak stay fractions, except: the GEMM efficiency scales by the two GPUs' bf16 matmul
// fractions where both are published; a target without fp8 tensor cores loses fp8_efficiency, one
// whose NVSwitch cannot reduce loses the nvls section; the attention efficiency's source names the
// kernel published for the target. Each change is stated in the profile (ProfileFit's notes).
void transfer_profile(ProfileFit& fit, const sim::GpuSpec& measured_on, const sim::GpuSpec& target);

}  // namespace tpsim::calibrate
