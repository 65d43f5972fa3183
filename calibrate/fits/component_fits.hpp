// The component fits fit_profile runs, each on the points of one kind: it sets its profile section in
// `out.profile` and appends its per-point and held-out errors to `out.fits`.
#pragma once

#include <string>
#include <vector>

#include "base/measurement.hpp"
#include "calibrate/profile/profile_fit.hpp"
#include "sim/cost/gpu_spec.hpp"
#include "sim/cost/profile.hpp"

namespace tpsim::calibrate {

// bf16 GEMMs: efficiency, HBM efficiency and overhead (the memory section follows the last two).
void fit_gemms(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu, ProfileFit& out);
// fp8 GEMMs: gemm.fp8_efficiency on the GPU's fp8 peak, the bf16 fit's other values kept.
void fit_fp8_gemms(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu, ProfileFit& out);
// Without fp8 GEMMs: gemm.fp8_efficiency from the GPU's published fp8 / bf16 matmul fractions, if known.
void derive_fp8_efficiency(const sim::GpuSpec& gpu, ProfileFit& out);

// Grouped GEMMs (an MoE layer's experts in one kernel) reach this fraction of the rate this cost model gives a
// dense GEMM of the same tiles: CUTLASS grouped bf16 GEMMs of Qwen3-30B-A3B's expert shapes on H100
// (TransformerEngine PR #2045, TE 2.7: 650.574 TFLOP/s for 8 experts x 4096 rows and 636.927 for 16 x 2048, N 768,
// K 2048; calibrate/data/public/grouped_gemm_h100_bf16.csv) over the h100-sxm profile's 770.6 TFLOP/s for those
// 768 tiles in 6 waves: 0.844 and 0.827.
inline constexpr double kGroupedGemmRatio = 0.8353;
// gemm.grouped_efficiency: the bf16 efficiency times kGroupedGemmRatio (H100's ratio, assumed on every GPU).
void derive_grouped_efficiency(ProfileFit& out);
// The gated delta rule's kernels of hybrid stacks (the linear_attention section), derived from public Hopper
// timings of FLA's kernels and vLLM's decode kernel (calibrate/data/public/gated_delta_rule_hopper.csv; a test
// recomputes each from it), and assumed on every GPU:
// - efficiency: the chunked kernel's rate solved, with chunk_step_us, from the differences of the H800 pair
//   (PaddlePaddle/flash-attention PR #133) and of the H100 pair (flashinfer-ai/flashinfer PR #3866): 69.4 TFLOP/s
//   of the 989.4 peak; each pair's difference cancels its per-call constant;
// - chunk_step_us: one chunk of the state pass along one chain;
// - decode_hbm_efficiency and decode_overhead_us: the slope (2.67 TB/s of 4.8) and intercept of the H200 pair
//   (vllm-project/vllm PR #31722).
inline constexpr double kDeltaRuleEfficiency = 0.07015;
inline constexpr double kDeltaRuleChunkStepUs = 0.5195;
inline constexpr double kDeltaRuleDecodeHbmEfficiency = 0.5556;
inline constexpr double kDeltaRuleDecodeOverheadUs = 11.44;
// - backward_ratio: the chunked backward's time over the forward's, the mean of FLA's published GB200 forward and
//   forward + backward timings at head dim 128 and 786,432 tokens x heads or more (fla-org/flash-linear-attention
//   README; smaller shapes there are host-bound), assumed on every GPU.
inline constexpr double kDeltaRuleBackwardRatio = 2.677;
// The linear_attention section from those constants.
void derive_linear_attention(ProfileFit& out);
// DeepEP's normal kernels (the deepep section), from its published H800 table (deepseek-ai/DeepEP docs/legacy.md;
// calibrate/data/public/deepep_h800.csv, recomputed by a test), assumed on every GPU:
// - nvlink_efficiency: the intranode EP 8 dispatch and combine bandwidths (153, 158 GB/s of received tokens) over
//   the H800's 200 GB/s NVLink port;
// - rdma_efficiency: the internode EP 32 and EP 64 rows (58, 57, 51, 50 GB/s of tokens counted once per destination
//   node) over the 50 GB/s CX7 NIC; EP 16 is left out, NVLink-bound there (DeepEP issue #285).
inline constexpr double kDeepEpNvlinkEfficiency = 0.7775;
inline constexpr double kDeepEpRdmaEfficiency = 1.08;
// Its low-latency kernels (deepep.low_latency), from aiconfigurator's published H100 sweep of them (sglang's
// DeepEP benchmark over 1 to 2,048 tokens per GPU at EP 8 to 64, 8 GPUs and a 400 Gb/s NIC per GPU per node;
// calibrate/data/public/deepep_ll_h100.csv, recomputed by a test), least squares of time on the bytes the benchmark
// counts, 8 to 256 tokens (decode's batches; below 8 its masked routes leave too few bytes), assumed on every GPU:
// - inside a node (EP 8): dispatch 14.60 us + bytes at 0.6440 of the 450 GB/s port, combine 10.25 us + bytes at
//   0.5134 (the combine reduces what it receives);
// - across nodes (EP 16, 32, 64; dispatch and combine together): 25.26 us + the bytes from other nodes (7/8 of
//   them at EP 64) at 0.9226 of the NIC.
inline constexpr double kDeepEpLowLatencyDispatchNvlinkEfficiency = 0.6440;
inline constexpr double kDeepEpLowLatencyCombineNvlinkEfficiency = 0.5134;
inline constexpr double kDeepEpLowLatencyDispatchNvlinkLatencyUs = 14.60;
inline constexpr double kDeepEpLowLatencyCombineNvlinkLatencyUs = 10.25;
inline constexpr double kDeepEpLowLatencyRdmaEfficiency = 0.9226;
inline constexpr double kDeepEpLowLatencyRdmaLatencyUs = 25.26;
// The deepep section from those constants, or its low_latency part where a base profile gave the rest.
void derive_deepep(ProfileFit& out);
// Peer copies of two sizes or more: the copy engine's step latency and efficiency.
void fit_copy_steps(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu, ProfileFit& out);
// GEMMs overlapped with collectives: nccl.sms.
void fit_sm_share(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu, ProfileFit& out);
// Launch chains: launch.host_us, launch.stream_wait_us and launch.gpu_wait_us.
void fit_launches(const std::vector<const Measurement*>& points, ProfileFit& out);
// All-reduces run as one_shot, two_shot or nvls, collectives run as multimem, or rings (any collective, any rank count)
// run with one NCCL protocol (nccl_simple, nccl_ll, nccl_ll128) (`name`): that transport's latency and efficiency.
void fit_transport(const std::string& name, const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu,
                   sim::TransportParams& target, ProfileFit& out);
// Ring all-gathers / reduce-scatters (and ring all-reduces), any rank count: the nccl section in one or
// two protocol regimes, and nccl.call_latency where the points hold two step counts.
void fit_ring_protocols(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu, ProfileFit& out);
// Ring all-reduces, where no ring fit runs: nccl.call_latency alone, the profile's
// ring regimes kept (the per-step costs of the same NVLink; the per-call cost of another software stack).
void fit_call_latency(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu, ProfileFit& out);
// Ring points of one NCCL protocol ("ll", "ll128", "simple"), where no other fit told the call latency:
// nccl.call_latency with that regime's line, the step latency NCCL's own per-step constant where the
// points hold one step count.
void fit_call_latency_with_regime(const std::string& protocol, const std::vector<const Measurement*>& points,
                                  const sim::GpuSpec& gpu, ProfileFit& out);
// Ring all-reduces across nodes of one system: the network section.
void fit_network(const std::vector<const Measurement*>& points, ProfileFit& out);
// All-reduces run as tree: the tree section.
void fit_tree_section(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu, ProfileFit& out);

}  // namespace tpsim::calibrate
