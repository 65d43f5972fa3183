// How a communication op runs as point-to-point steps: ring collectives (n-1 or 2(n-1) steps to the
// next rank), one-shot direct collectives (one step to every peer), and async-TP exchange steps.
#pragma once

#include <vector>

#include "model/op.hpp"
#include "sim/cost_model.hpp"

namespace tpsim::sim {

struct CommPlan {
  model::CollectiveAlgorithm algorithm = model::CollectiveAlgorithm::kRing;  // resolved (never auto)
  int steps = 0;
  std::vector<int> send_offsets;      // every step sends one message to each of these ranks
  std::vector<int> recv_offsets;      // and receives one from each of these
  double message_bytes = 0;           // payload of one message
  TransportParams transport;          // latency per step and link efficiency
  bool low_latency_protocol = false;  // ring on NCCL's LL / LL128 regime (profile nccl.small_messages)
  bool uses_sms = true;               // an SM-driven kernel (slows concurrent compute)
};

// The plan of `op` over `ranks` ranks; `auto` collectives take the fastest plan on an idle node:
// for all-reduces, the ring, one-shot up to the profile's one_shot_max_bytes, two-shot up to its
// two_shot_max_bytes where the profile has it, and NVLS where the profile has it; rings for all-gathers and
// reduce-scatters. All-to-alls and send/recvs always run as one step of NCCL point-to-point messages.
CommPlan plan_communication(const model::Op& op, int ranks, const CostModel& cost);

// The plan's time alone on an idle non-blocking node where every port carries `flows` messages.
double idle_seconds(const CommPlan& plan, const CostModel& cost);

}  // namespace tpsim::sim
