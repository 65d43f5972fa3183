// Fits a transport's step latency and link efficiency to ring collective times:
// t = c + steps * (latency + S / (n * link_Bps * efficiency)), linear in the tensor size S, where c is
// NCCL's per-call latency and steps n - 1 (all-gather, reduce-scatter) or 2 (n - 1) (all-reduce); and
// the one-shot, two-shot, NVLS and copy-step lines. Each fit predicts with the closed form the
// simulator's plans have (sim/cost/collective_time.hpp); only its least-squares rows are written here.
#pragma once

#include <string>
#include <vector>

#include "sim/cost/collective_time.hpp"
#include "sim/cost/profile.hpp"

namespace tpsim::calibrate {

struct RingSample {
  int ranks = 0;
  double tensor_bytes = 0;  // the full (gathered / unscattered) tensor
  double seconds = 0;
  int steps = 0;  // ring steps: 2 (n - 1) for an all-reduce; 0 means n - 1 (all-gather, reduce-scatter)
  model::CollectiveKind kind = model::CollectiveKind::kAllGather;  // what ran (multimem's pattern follows it)
  // Host time per call inside `seconds` that the closed forms add to the given call latency: the framework's
  // (launch.collective_host_us) for an NCCL collective timed through torch.distributed, else 0. Fits of the call
  // latency itself take it as part of the constant they fit (their samples leave it 0).
  double framework_s = 0;
};

// The sample's ring steps (sim::ring_step_count: an all-gather's when `steps` is 0).
inline int ring_steps(const RingSample& s) {
  return s.steps > 0 ? s.steps : sim::ring_step_count(model::CollectiveKind::kAllGather, s.ranks);
}

struct RingFit {
  sim::TransportParams params;
  double max_abs_error_pct = 0;
  size_t points = 0;
};

// Weighted least squares on relative error, the call latency c given; samples may mix rank counts. A
// latency that would come out negative is 0 (the line through the origin).
RingFit fit_ring(const std::vector<RingSample>& samples, double link_Bps, double call_latency_s = 0);

// Two protocol regimes of the ring, as NCCL runs them: a low-latency one (LL / LL128) for small
// messages and Simple for large ones, each a latency / efficiency pair, the faster one running, after
// the call latency that both pay.
struct RingRegimes {
  sim::TransportParams small;
  sim::TransportParams simple;
  bool has_small = false;  // false: one regime fits as well (within 10% of its squared error)
  double call_latency_s = 0;
  bool call_latency_fitted = false;  // false: the given one was kept
  double max_abs_error_pct = 0;
};

// Tries every split of the samples by step message size (tensor / ranks) into a small-message and a
// large-message line and keeps the split whose min() of the two fits best; samples may mix rank
// counts. The call latency is fitted with the small-message line (or the single line) when its samples
// hold two step counts (all-reduces beside all-gathers, or two rank counts): only there does it differ
// from the per-step latency, which a message size cannot tell apart; otherwise `call_latency_s` is kept.
RingRegimes fit_ring_regimes(const std::vector<RingSample>& samples, double link_Bps, double call_latency_s = 0);

// A ring collective sample's time in one regime, after `call_latency_s` and the sample's framework time:
// sim::ring_seconds, c + steps (L + S / (n B eff)), plus framework_s.
double ring_seconds(const sim::TransportParams& params, const RingSample& sample, double link_Bps,
                    double call_latency_s = 0);

// The time of a ring collective sample under given regimes (the faster one).
double ring_regimes_seconds(const RingRegimes& regimes, const RingSample& sample, double link_Bps);

// A ring line with its call latency fitted: c, the per-step latency and the efficiency where the samples
// hold two step counts (all-reduces beside all-gathers, or two rank counts); with one step count c and
// the efficiency, the per-step latency held at `step_latency_s` (one step count cannot tell the two
// apart). A latency that would come out negative is 0.
struct RingCallFit {
  sim::TransportParams params;
  double call_latency_s = 0;
  bool step_latency_fitted = false;
};
RingCallFit fit_ring_and_call(const std::vector<RingSample>& samples, double link_Bps, double step_latency_s);

// Fits the network transport of ring all-reduces across nodes, where each step's slowest hop is the
// one between nodes, striped over the node's NICs (node_nic_Bps in all, one direction):
// t = c + 2 (n - 1) (latency + S / (n * node_nic_Bps * efficiency)).
RingFit fit_network_ring(const std::vector<RingSample>& samples, double node_nic_Bps, double call_latency_s = 0);

// Fits a one-shot all-reduce: t = latency + (n - 1) * S / (link_Bps * efficiency), each rank
// reading the whole tensor S from each of its n - 1 peers in one step. Samples may mix rank counts.
RingFit fit_one_shot(const std::vector<RingSample>& samples, double link_Bps);

// Fits a two-shot all-reduce: t = 2 (latency + (n - 1) (S / n) / (link_Bps * efficiency)), a direct
// reduce-scatter then a direct all-gather. Samples may mix rank counts.
RingFit fit_two_shot(const std::vector<RingSample>& samples, double link_Bps);

// Fits a copy-engine step: t = latency + S / (link_Bps * efficiency), one copy over one link.
RingFit fit_copy_step(const std::vector<RingSample>& samples, double link_Bps);

// Fits NVLS all-reduce: t = c + latency + S / (link_Bps * efficiency), each GPU moving the tensor once
// each way through the switch, c (NCCL's per-call latency) given.
RingFit fit_nvls(const std::vector<RingSample>& samples, double link_Bps, double call_latency_s = 0);
// Symmetric-memory multicast kernels, each sample with its collective's pattern (sim::multimem_pattern).
RingFit fit_multimem(const std::vector<RingSample>& samples, double link_Bps);

}  // namespace tpsim::calibrate
