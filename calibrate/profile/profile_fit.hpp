// Fits a cost profile from measurements (the schema of measurement.hpp): GEMM efficiency, NCCL ring,
// one-shot, two-shot and NVLS all-reduce latency and bandwidth, the network transport of ring
// all-reduces across nodes, copy-engine efficiency. Each fit reports its
// error per point and, with four points or more, its held-out error (fitted on the even points,
// evaluated on the odd ones). Parameters without measurements keep their defaults, marked so.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/measurement.hpp"
#include "sim/cost/gpu_spec.hpp"
#include "sim/cost/profile.hpp"
#include "sim/cost/profile_fields.hpp"

namespace tpsim::calibrate {

struct PointError {
  std::string origin;  // file:line of the measurement
  double error_pct = 0;
};

struct ComponentFit {
  std::string name;  // gemm, nccl, one_shot, nvls, copy_engine
  std::vector<PointError> errors;
  double max_abs_error_pct = 0;
  double held_out_max_abs_error_pct = -1;  // -1: fewer than four points
  // How the points' algorithm and protocol are known (stated by their sources, or inferred), for the section's
  // source; empty for fits that are not of collectives.
  std::string basis;
};

struct ProfileFit {
  sim::CostProfile profile;
  std::string base;  // where unfitted sections come from, for people: empty when every section is fitted or sourced
  // The base as a profile's `base:` key names it (a GPU preset, or a profile file relative to the output);
  // empty: none.
  std::string base_ref;
  std::vector<ComponentFit> fits;
  std::vector<std::string> not_fitted;  // components that kept their defaults
  std::string fp8_source;               // how gemm.fp8_efficiency was found here (empty: kept from the base)
  std::string grouped_source;           // how gemm.grouped_efficiency was found here (empty: kept from the base)
  std::string shared_tail_source;       // how gemm.shared_tail_tiles was found here (empty: kept from the base)
  std::string sms_source;               // where nccl.sms, nvls_sms and p2p_sms come from (empty: kept from the base)
  std::string all_ranks_source;         // where copy_engine.all_ranks_link_efficiency comes from (empty: the base's)
  bool copy_latency_fitted = false;     // copy_engine.step_latency from copies of several sizes
  bool launch_host_fitted = false;      // launch.host_us / stream_wait_us from eager launch chains
  bool launch_gpu_fitted = false;       // launch.gpu_wait_us from queued (GPU-bound) launch chains
  size_t other_gpu_points = 0;          // points of another GPU: only the network section takes them
  // All-reduces NCCL ran as rings with NVLS enabled (file:line): they set nvls.min_ranks.
  std::vector<std::string> nvls_declined;
  // Set when the profile was carried to another GPU (profile_transfer.hpp): how the GEMM efficiency
  // was scaled, why the nvls or multimem sections were dropped, the attention efficiency's source.
  std::string gemm_source;
  // Why optional transport sections were dropped ("no nvls section: ..."), keyed by the section the written profile
  // gives the comment after (the last of those it is about).
  std::map<std::string, std::string> absent_notes;
  std::string attention_source;
  std::string attention_fp8_source;       // how attention.fp8_efficiency was found here (empty: from the base)
  std::string attention_backward_source;  // how attention.backward_efficiency was found (empty: from the base)
  std::string call_latency_source;        // how nccl.call_latency was found here (empty: kept)
  // The fitted per-call constant came from collectives timed through a framework: it is NCCL's call latency plus
  // launch.collective_host_us, split as set_call_latency says (NCCL's part of `call_latency_protocol`).
  bool call_latency_split = false;
  double timed_call_latency_s = 0;
  model::Protocol call_latency_protocol = model::Protocol::kLL;
  std::string power_measured_source;   // what power.measured_at_W is (empty: kept from the base)
  std::string power_curve_source;      // how power.idle_W and exponent were fitted (empty: assumed, or the base's)
  std::string sustained_ratio_source;  // where power.sustained_ratio comes from (empty: kept from the base, or none)
  std::string transfer_energy_source;  // how power.transfer_pJ_per_bit was found (empty: kept from the base)
  std::map<std::string, std::string> attention_kernel_sources;  // attention.kernels' sources (empty: the base's)
  // Fits refused for an impossible value (a link efficiency above 1, a latency below 0), one line each: the value,
  // why it cannot be, what measurements would fit it. The section keeps the base's values (or stays absent).
  std::vector<std::string> refused;
};

// `gpu` gives the peak numbers the fractions are relative to (the GPU the measurements ran on); points
// of other GPUs fit nothing but the network section (a property of the NICs). A latency / efficiency
// fit needs at least two message sizes.
// Sections the measurements do not fit keep `base`'s values (named `base_name` in the YAML) when
// given, else the built-in defaults.
ProfileFit fit_profile(const std::vector<Measurement>& measurements, const sim::GpuSpec& gpu,
                       const sim::CostProfile* base = nullptr, const std::string& base_name = "");

// Whether `fit` holds a component fit of that name ("gemm_fp8", "copy_engine_all_ranks", ...).
bool has_fit(const ProfileFit& fit, const std::string& name);

// Where copy_engine.all_ranks_link_efficiency comes from in a profile fitted without a base or pulls of its own:
// the h100-sxm fit's value, on another GPU marked assumed (carried from H100 without evidence).
std::string copy_engine_all_ranks_source(const std::string& gpu);
// attention.efficiency's source where no fit or carry says otherwise: FlashAttention-3's published forward on H100
// SXM, its causal rate and forward_causal_tokens fitted over the lengths of the paper's Fig. 5d.
std::string fa3_forward_source();

// The attention section's sources where its rates (the FlashAttention-3 paper's, on H100 SXM) are carried from
// `from_gpu`'s profile to `target`: not fitted here on another SM90 GPU (the same kernels), assumed elsewhere; each
// source keeps what it said, or `unknown_origin` (the base it came from) where it said nothing.
void carry_attention_sources(const std::string& from_gpu, const sim::GpuSpec& target, ProfileFit& out,
                             const std::string& unknown_origin = "");

// The same value fitted on `measured_on`'s pulls (`origin`: how) and carried to `gpu`, marked assumed.
std::string carried_all_ranks_source(const std::string& gpu, const std::string& measured_on, const std::string& origin);

// torch.distributed's host work per NCCL call beyond the launch (launch.collective_host_us) where no point timed
// through torch fits it: the value the h200-sxm profile fits on the H200 all-reduce sweep (one call at a time
// through torch 2.9.1 on an idle GPU), a property of the host and PyTorch rather than of the GPU; a test refits it.
inline constexpr double kTorchCollectiveHostUs = 10.1325;
std::string torch_collective_host_source();

// The nccl-tests runs whose logs would fit what `fit` did not fit from measurements of its own (each a line: the
// binary, how to run it, the sections and the jobs that need them); empty when nothing is missing.
std::vector<std::string> nccl_tests_still_needed(const ProfileFit& fit);

// The profile as written (profile_record.cpp): its values, the measurement files, where every value comes from and
// every fit's errors; input/profile/profile_writer.hpp writes it as YAML.
sim::WrittenProfile profile_record(const ProfileFit& fit, const std::string& target_gpu,
                                   const std::vector<std::string>& files);

}  // namespace tpsim::calibrate
