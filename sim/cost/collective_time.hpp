// Collectives alone on an idle fabric in closed form, written once: a step's time through one port and
// the step patterns of the plans inside one node (ring, direct, two-shot, NVLS, one message) with the
// totals of ring, one-shot, two-shot, NVLS and copy steps. The plans (sim/engine/comm_plan.*) take their steps
// from these patterns and cost each step with step_seconds; the fitters (calibrate/) predict with the
// totals. Ignores contention and node boundaries (idle_seconds of the plan has them).
#pragma once

#include "model/graph/op.hpp"
#include "sim/cost/profile.hpp"

namespace tpsim::sim {

// One step alone: the transport's latency, then `port_bytes` through a port of `port_Bps` (one
// direction) at the transport's link efficiency.
double step_seconds(const TransportParams& transport, double port_bytes, double port_Bps);

// How a plan moves a tensor inside one node: `steps` alike, in each of which every rank sends one
// message of `message_bytes` to each of `peers` ranks (and receives as many).
struct StepPattern {
  int steps = 0;
  int peers = 0;
  double message_bytes = 0;
};

// A ring's steps: n - 1 for an all-gather or reduce-scatter, 2 (n - 1) for an all-reduce.
int ring_step_count(model::CollectiveKind kind, int ranks);
// Ring: `steps` steps, each a 1/n block of the tensor to the next rank.
StepPattern ring_pattern(int steps, double tensor_bytes, int ranks);
// Direct (one-shot, all-to-all): one step to every peer, the whole tensor (all-reduce) or a 1/n block.
StepPattern direct_pattern(model::CollectiveKind kind, double tensor_bytes, int ranks);
// Two-shot all-reduce: a direct reduce-scatter then a direct all-gather, a 1/n block to every peer each.
StepPattern two_shot_pattern(double tensor_bytes, int ranks);
// NVLS all-reduce: the tensor into the switch and back once, as 1/(n-1) of it to and from every peer.
StepPattern nvls_pattern(double tensor_bytes, int ranks);
// Symmetric-memory multicast kernels: an all-reduce moves what NVLS moves (the tensor into and out of
// each port); an all-gather or reduce-scatter what the direct pattern moves ((n - 1) / n of it, each port's
// busier direction: multicast stores or in-switch reduced loads carry each block once per receiver).
StepPattern multimem_pattern(model::CollectiveKind kind, double tensor_bytes, int ranks);
// One message (a copy, a send/recv): one step, the bytes to one peer.
StepPattern one_peer_pattern(double bytes);

// What each rank's port carries in one step of the pattern: peers x message_bytes.
double port_bytes(const StepPattern& pattern);

// The pattern alone: the call latency, then `steps` x step_seconds(port_bytes).
double pattern_seconds(const StepPattern& pattern, const TransportParams& transport, double port_Bps,
                       double call_latency_s = 0);

// The totals the fitters predict with, S the whole tensor over n ranks.
// Ring: c + steps (latency + (S / n) / (port_Bps eff)).
double ring_seconds(const TransportParams& transport, int steps, double tensor_bytes, int ranks, double port_Bps,
                    double call_latency_s);
// One-shot: latency + (n - 1) S / (port_Bps eff) for an all-reduce.
double one_shot_seconds(const TransportParams& transport, model::CollectiveKind kind, double tensor_bytes, int ranks,
                        double port_Bps);
// Two-shot: 2 (latency + (n - 1) (S / n) / (port_Bps eff)).
double two_shot_seconds(const TransportParams& transport, double tensor_bytes, int ranks, double port_Bps);
// NVLS: c + latency + (n - 1) (S / (n - 1)) / (port_Bps eff).
double nvls_seconds(const TransportParams& transport, double tensor_bytes, int ranks, double port_Bps,
                    double call_latency_s);
// Multimem: latency + S / (port_Bps eff) for an all-reduce, latency + (n - 1) (S / n) / (port_Bps eff) for
// an all-gather or reduce-scatter; no NCCL call.
double multimem_seconds(const TransportParams& transport, model::CollectiveKind kind, double tensor_bytes, int ranks,
                        double port_Bps);
// One copy (an async-TP exchange step): latency + bytes / (port_Bps eff).
double copy_step_seconds(const TransportParams& transport, double bytes, double port_Bps);

}  // namespace tpsim::sim
