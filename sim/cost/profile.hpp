// A calibration profile: every cost-model parameter, fitted from measurements or stated with a source.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/scenario.hpp"

namespace tpsim::sim {

// GEMM kernels: tiles of tile_m x tile_n output per SM, split-K when tiles underfill the SMs.
struct GemmParams {
  double efficiency = 0.8;  // fraction of peak tensor FLOP/s a full wave of tiles reaches
  // The same for fp8 GEMMs, of the fp8 peak; absent: the profile cannot run fp8.
  std::optional<double> fp8_efficiency;
  // The same for grouped GEMMs (one kernel over an MoE layer's local experts, bf16); absent: the profile cannot
  // run MoE layers.
  std::optional<double> grouped_efficiency;
  double hbm_efficiency = 0.85;  // fraction of HBM bandwidth a memory-bound GEMM reaches
  double overhead_s = 1e-6;      // per kernel: launch gap, prologue and epilogue
  int tile_m = 128;
  int tile_n = 256;
  int small_m_tile_m = 64;     // tile height when M <= this
  int min_k_per_split = 1024;  // split-K only while each split keeps at least this much K
  // A GEMM that ran while an SM-driven comm kernel held some of the SMs ends this many of its tile times
  // (its full-GPU wave time) later than its share of the SMs left gives (sim/sm_sharing.hpp); 0: no tail.
  double shared_tail_tiles = 0;
};

struct MemoryParams {
  double hbm_efficiency = 0.85;
  double overhead_s = 1e-6;
};

// Another attention kernel's rates on the same GPU (profile attention.kernels.<name>).
struct AttentionKernelRates {
  double efficiency = 0;                      // forward, causal, of the bf16 peak (as AttentionParams')
  double forward_causal_tokens = 0;           // as AttentionParams'
  std::optional<double> unmasked_efficiency;  // forward without a mask; absent: at efficiency
  std::optional<double> backward_efficiency;  // absent: that kernel cannot run phase train here
  double backward_causal_tokens = 0;          // as AttentionParams'
};

struct AttentionParams {
  // The kernel the efficiencies below describe ("fa3", "fa2", "cudnn"; empty: not said), and others the
  // profile knows (an implementation block chooses among them).
  std::string kernel;
  std::map<std::string, AttentionKernelRates> kernels;
  // Fraction of peak tensor FLOP/s of FlashAttention's causal forward over long sequences: over a causal square of L
  // tokens it takes 1 + forward_causal_tokens / L times the time its FLOPs take at this rate (the short rows' tiles
  // and the diagonal's; any causal block likewise by its Op::causal_inverse_length). forward_causal_tokens 0: the
  // causal forward at this rate at every length.
  double efficiency = 0.6;
  double forward_causal_tokens = 0;
  // The same without a mask (a context-parallel ring step off the diagonal, Op::causal_inverse_length 0); absent:
  // such blocks run at `efficiency`.
  std::optional<double> unmasked_efficiency;
  // The same for its fp8 (e4m3) path, of the fp8 peak; absent: the profile cannot run fp8 attention.
  std::optional<double> fp8_efficiency;
  // The same for FlashAttention's backward (of 2.5 times the forward's FLOPs) without a mask; absent: the profile
  // cannot run phase train.
  std::optional<double> backward_efficiency;
  // A causal mask's cost in the backward: over a causal square of L tokens it takes 1 + this / L times the time its
  // FLOPs take at backward_efficiency (the diagonal's tiles, masked and unevenly shared; any causal block likewise by
  // its Op::causal_inverse_length). 0: a causal backward at the unmasked rate.
  double backward_causal_tokens = 0;
};

// The gated delta rule's kernels of a hybrid stack's linear-attention layers (model/layers/linear_attention.hpp).
// Chunked (prefill, forward): its FLOPs at `efficiency` of the bf16 peak, plus the state pass's chunk steps
// (chunk_step_s each, along the longest chain, in waves of chains over the SMs); recurrent (decode): its
// state read and write at decode_hbm_efficiency of HBM bandwidth, plus decode_overhead_s. The chunked backward
// takes backward_ratio times the forward's time.
struct LinearAttentionParams {
  double efficiency = 0;
  double chunk_step_s = 0;
  double decode_hbm_efficiency = 0;
  double decode_overhead_s = 0;
  double backward_ratio = 0;
};

// DeepEP's normal kernels (an MoE layer's dispatch and combine under moe: {dispatcher: deepep}): the bytes a GPU
// receives over NVLink at nvlink_efficiency of its port, and the bytes it sends across nodes, counted as DeepEP
// counts them (once per token and destination node, its own node included), at rdma_efficiency of its NIC (above 1
// where the own node's share never crosses the NIC); the slower decides.
// Its low-latency kernels (decode): one message per token copy; a kernel takes its floor (latency) plus its bytes
// over NVLink at the kind's efficiency of the port inside a node, or plus the slower of those and the bytes from
// other nodes at rdma_efficiency of the NIC (with the RDMA floor) when the group spans nodes.
struct DeepEpLowLatencyParams {
  double dispatch_nvlink_efficiency = 0;
  double combine_nvlink_efficiency = 0;
  double dispatch_nvlink_latency_s = 0;
  double combine_nvlink_latency_s = 0;
  double rdma_efficiency = 0;
  double rdma_latency_s = 0;
};

struct DeepEpParams {
  double nvlink_efficiency = 0;
  double rdma_efficiency = 0;
  std::optional<DeepEpLowLatencyParams> low_latency;
};

// How compute-bound kernels clock down under a board power limit: a kernel that draws measured_at_W at
// the clock its profile's efficiencies were measured at draws idle_W + (measured_at_W - idle_W) (f /
// f_measured)^exponent at clock f, and its rate scales with f. Memory-bound kernels and transfers keep
// their rates (HBM and NVLink clocks do not follow the SM clock). Transfers through a GPU's port draw
// transfer_pJ_per_bit for every bit they move (its HBM read or write and its link), and beside a
// compute-bound kernel at the power limit that draw comes out of the SMs' share (sim/cost/power_limit.hpp).
struct PowerParams {
  double measured_at_W = 700;  // the power limit the GEMM and attention efficiencies were measured at
  double idle_W = 70;          // the draw that does not scale with the SM clock
  double exponent = 3;         // dynamic power ~ f V^2 with the voltage following the clock
  // Energy per bit of peer traffic, each direction of a GPU's port: 0 counts none (profiles without it).
  double transfer_pJ_per_bit = 0;
  // The share of the efficiencies' rates that compute-bound kernels run back to back for seconds hold at
  // measured_at_W, where the efficiencies come from short benchmarks that end before the power limiter
  // engages. Set: the board limit binds the power averaged over a window longer than kernels, and a
  // program's clock follows its share of compute-bound time (sim/engine/runner/window_clock.hpp); 0: the rates hold
  // at measured_at_W, and each kernel's clock follows the limit alone.
  double sustained_ratio = 0;
};

// One transport's point-to-point steps: each step costs latency + bytes / (link bandwidth x efficiency).
struct TransportParams {
  double step_latency_s = 4e-6;
  double link_efficiency = 0.75;
};

// Where one profile value comes from: fitted on measurements, or the source its profile states (a
// publication, an assumption, a base profile).
struct ValueSource {
  std::string value;  // as written
  bool fitted = false;
  std::string source;
};

struct CostProfile {
  std::string name;  // "default (h100-sxm)" or the file
  std::string gpu;   // the GPU preset it was fitted for
  // "gemm.efficiency" -> where it comes from, for every value the profile (or its base) gives.
  std::map<std::string, ValueSource> sources;
  GemmParams gemm;
  MemoryParams memory;
  AttentionParams attention;
  // Absent: the profile cannot run a hybrid stack's linear-attention layers.
  std::optional<LinearAttentionParams> linear_attention;
  // Absent: the profile cannot run DeepEP's all-to-alls.
  std::optional<DeepEpParams> deepep;
  // Absent: the profile cannot say how its compute rates change below measured power (a run at a lower
  // power limit is refused).
  std::optional<PowerParams> power;
  TransportParams nccl;  // SM-driven kernels (NCCL collectives and send/recv): the Simple protocol
  // NCCL's low-latency protocols for ring steps: lower step latency, lower bandwidth. A ring runs the
  // fastest regime the profile has for its size, as NCCL's tuner picks, or the one forced
  // (NCCL_PROTO). nccl_ll and nccl_ll128 are fitted on measurements that name their protocol;
  // nccl_small is the one low-latency regime fitted where they do not (LL or LL128, unknown which).
  std::optional<TransportParams> nccl_small;
  std::optional<TransportParams> nccl_ll;
  std::optional<TransportParams> nccl_ll128;
  // SMs an NCCL kernel holds while it runs, one per channel (CTA): rings and trees (and the custom
  // one-shot / two-shot kernels, assumed alike), NVLS, and point-to-point (send/recv, all-to-all, async-TP
  // steps over SMs). Rings and trees launch fewer channels for small sizes, as NCCL does (sim/sm_sharing.hpp).
  int nccl_sms = 24;
  int nccl_nvls_sms = 16;
  int nccl_p2p_sms = 32;
  // Paid on the GPU once per NCCL collective call (ring, NVLS, tree, all-to-all, send/recv) before its first
  // step, as NCCL's own tuning model adds a base latency per call to its per-step latencies; the SMs are held
  // meanwhile (nccl.call_latency_us). Fitted on collectives that call NCCL directly; where the points were timed
  // through a framework, their per-call constant is this plus collective_host_s, and this is NCCL's own base
  // latency.
  double nccl_call_latency_s = 0;
  TransportParams copy_engine;  // cudaMemcpyPeerAsync-like DMA, one pair of GPUs copying alone
  // The link efficiency of a copy-engine pull while every GPU of the group pulls at once (the steps of an
  // async-TP pipeline, where each rank reads one peer and is read by another); absent: the one-pair value.
  std::optional<double> copy_engine_all_ranks_efficiency;
  // One-shot all-reduce (every rank reads every peer's tensor in one step, as vLLM's custom
  // all-reduce does); `auto` uses it for all-reduces up to one_shot_max_bytes when it is faster.
  // Absent unless measured.
  std::optional<TransportParams> one_shot;
  double one_shot_max_bytes = 8.0 * 1024 * 1024;
  // Two-shot all-reduce (a direct reduce-scatter then a direct all-gather: two steps of a 1/n block
  // to and from every peer), as custom all-reduce kernels run it; `auto` uses it up to
  // two_shot_max_bytes when it is faster. Absent unless measured.
  std::optional<TransportParams> two_shot;
  double two_shot_max_bytes = 8.0 * 1024 * 1024;
  // NVLS all-reduce (NVSwitch in-switch reduction): each GPU moves the tensor once each way;
  // absent where the GPU or switch has none.
  std::optional<TransportParams> nvls;
  // Symmetric-memory multicast kernels (no NCCL call): all-reduces (multimem), all-gathers and
  // reduce-scatters (multimem_gather); absent where not measured, or on a fabric without in-switch reduction.
  std::optional<TransportParams> multimem;
  std::optional<TransportParams> multimem_gather;
  // The fewest ranks NCCL runs NVLS on when it may choose (with fewer it picks the ring even where
  // NVLS is enabled); `auto` follows it, a forced NVLS does not.
  int nvls_min_ranks = 2;
  // Inter-node hops of NCCL collectives on a multi-node fabric (ib-rail): each step's latency over the
  // network and the fraction of the NIC's line rate a message reaches. Absent until fitted on
  // multi-node measurements; a TP group that spans nodes needs it.
  std::optional<TransportParams> network;
  // NCCL's double binary tree all-reduce: every hop's step latency and link efficiency (NVLink inside
  // nodes, NICs across them), pipelined in chunks of up to tree_chunk_bytes per tree. Absent unless
  // fitted on all-reduces run as tree; `auto` considers it only across nodes.
  std::optional<TransportParams> tree;
  // Assumed: NCCL's 4 MiB Simple buffer per channel (NCCL_BUFFSIZE) over its 8 steps (NCCL_STEPS)
  // is 512 KiB per channel and step; 8 channels move 4 MiB per pipeline step.
  double tree_chunk_bytes = 4.0 * 1024 * 1024;
  // Host time to launch one kernel or communication call; a kernel cannot start before the host
  // has launched it and every op before it. CUDA graphs replay without it.
  double host_launch_s = 0;
  // Host time of each wait an op needs on another stream's op (an event record and a
  // cudaStreamWaitEvent); 0 until measured (tpsim-real launch). CUDA graphs replay without it.
  double stream_wait_s = 0;
  // Host time a framework spends per collective call beyond launch.host_us (torch.distributed's
  // ProcessGroupNCCL: its work object, events and stream bookkeeping), launch.collective_host_us: charged on the
  // host before the call's launch, so hidden while the host runs ahead; CUDA graphs replay without it. Fitted as
  // the rest of the per-call constant of collectives timed through the framework, after NCCL's own.
  double collective_host_s = 0;
  // GPU time between an op's end and the start of an op on another stream of the same GPU that waits
  // for it (the event wait resolved on the device); 0 until measured (tpsim-real launch, its chains
  // queued ahead of the GPU). Charged with or without CUDA graphs.
  double gpu_wait_s = 0;
};

// One optional transport section of a profile (one_shot, two_shot, nvls, multimem, multimem_gather, network, tree):
// absent unless measured or given by its base. Its row in transport_sections() is the one place it is declared: the
// reader (input/profile/profile_reader.cpp), the fitter (calibrate/profile/profile_fit.cpp, profile_record.cpp) and the
// writer (input/profile/profile_writer.cpp) all loop over that table. docs/architecture.md shows adding one.
struct TransportSection {
  // How a section's one setting beside its transport reads: a byte count from 0, a positive byte count, a
  // rank count.
  enum class SettingKind { kBytes, kPositiveBytes, kRanks };
  // The setting (max_bytes, min_ranks, chunk_bytes): its key, how it reads, where it lives, and where its
  // value comes from as the written profile says (empty: the writer says it, from the fit).
  struct Setting {
    const char* key = nullptr;  // nullptr: the section has none
    SettingKind kind = SettingKind::kBytes;
    double (*get)(const CostProfile&) = nullptr;
    void (*set)(CostProfile&, double) = nullptr;
    const char* source = "";
    double written_above = -1;  // the writer writes it only above this value (-1: always)
  };
  const char* key;  // its YAML key, and its fit's name
  std::optional<TransportParams> CostProfile::*params;
  const char* fitted_on;  // what its fit's points are, as the written profile's source says ("fitted on ...")
  // The measurements its fit takes: all-reduces of one algorithm, or all-gathers and reduce-scatters of one
  // (empty algorithm: the section has a fitter of its own, calibrate/fits/component_fits.hpp).
  const char* algorithm = "";
  bool gathers = false;                 // the fit takes all-gathers and reduce-scatters, not all-reduces
  bool needs_switch_reduction = false;  // fitted only where the NVSwitch reduces in the switch
  Setting setting{};
};

// Every optional transport section, in the order a written profile gives them.
const std::vector<TransportSection>& transport_sections();

// The ring regime of a protocol (kSimple: nccl; kLowLatency: nccl_small); nullptr where the profile
// has none (kAuto has none).
const TransportParams* protocol_regime(const CostProfile& profile, model::Protocol protocol);
// Why a forced `protocol` cannot run on `profile` (it has no such regime); empty when it can (auto too).
std::string protocol_unavailable_reason(const CostProfile& profile, model::Protocol protocol);

// Puts attention kernel `kernel`'s rates ("fa2", "fa3", "cudnn") in place of the profile's own where they
// differ (an fp8 rate stays only with the profile's kernel); returns why it cannot (the profile knows no
// such kernel), empty when done.
std::string select_attention_kernel(CostProfile& profile, const std::string& kernel);

// The values of `profile` that are not fitted, with their sources ("attention.efficiency" -> ...).
std::vector<std::pair<std::string, ValueSource>> assumed_values(const CostProfile& profile);

}  // namespace tpsim::sim
