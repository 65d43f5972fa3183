// How a communication op runs as point-to-point steps: ring collectives (n-1 or 2(n-1) steps to the
// next rank), one-shot direct collectives (one step to every peer), and async-TP exchange steps. On a
// multi-node fabric, flows between nodes run on the profile's network transport over the NICs.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/graph/op.hpp"
#include "sim/cost/cost_model.hpp"
#include "sim/cost/hbm_traffic.hpp"
#include "sim/cost/nccl_tuner.hpp"
#include "sim/engine/tree_schedule.hpp"

namespace tpsim::sim {

struct CommPlan {
  model::CollectiveAlgorithm algorithm = model::CollectiveAlgorithm::kRing;  // resolved (never auto)
  int steps = 0;
  std::vector<int> send_offsets;  // every step sends one message to each of these ranks
  std::vector<int> recv_offsets;  // and receives one from each of these
  // Plans whose peers differ by rank (trees): each step's peers of every rank, instead of offsets.
  std::shared_ptr<const PeerSchedule> schedule;
  double message_bytes = 0;   // payload of one message
  TransportParams transport;  // latency per step and link efficiency
  double call_latency_s = 0;  // once, before the first step (NCCL's per-call latency)
  // An NCCL call (rings, NVLS, tree, point-to-point): the host pays the profile's collective_host_s to issue it.
  bool nccl_call = false;
  model::Protocol protocol = model::Protocol::kSimple;  // ring steps: the NCCL protocol regime they run
  bool uses_sms = true;                                 // an SM-driven kernel (slows concurrent compute)
  int sms = 0;  // the SMs it holds while it runs, where uses_sms (sim/sm_sharing.hpp)
  // HBM bytes read and written at both ends per payload byte a flow moves (sim/cost/hbm_traffic.hpp): NCCL's rings
  // and send/recv stage theirs in FIFO buffers; everything else counts as a copy's read and write.
  double hbm_accesses_per_link_byte = kCopyHbmAccessesPerLinkByte;
  int ranks = 0;
  // Multi-node groups (ib-rail): rank r sits in node r / gpus_per_node; 0 when the group is one node.
  int gpus_per_node = 0;
  TransportParams network;     // flows between nodes
  bool stripes_rails = false;  // NCCL's channels spread each inter-node ring hop over every rail's NIC

  // Where the algorithm was chosen as NCCL chooses (`nccl`, or a ring whose protocol NCCL picks): NCCL's own
  // choice, and why the plan differs from it when the profile or fabric cannot cost that choice.
  std::optional<NcclOption> nccl_choice;
  std::optional<NcclOption> nccl_run;  // the pair of NCCL's ranking that ran (its first, unless `deviation`)
  std::string deviation;

  // A collective over a group outside the simulated one (the data-parallel group, CommGroup::kData): the plan
  // above says how it runs over that group; the engine runs its closed form on an idle fabric as a wait of
  // `latency_s`, then `link_bytes` each way through the GPU's own link to the group (its NIC between nodes,
  // else its NVLink port) at that link's rate, shared with whatever else crosses it.
  struct OutsideGroup {
    double latency_s = 0;
    double link_bytes = 0;
    bool network = false;
  };
  std::optional<OutsideGroup> outside;
  // The rate of the link an outside group's flows leave the GPU through: its NIC, or its NVLink port.
  static double outside_link_Bps(const CostModel& cost, bool network) {
    return network ? cost.fabric().nic_Bps : cost.port_Bps();
  }

  bool crosses_nodes(int src, int dst) const { return gpus_per_node > 0 && src / gpus_per_node != dst / gpus_per_node; }
  const TransportParams& flow_transport(int src, int dst) const {
    return crosses_nodes(src, dst) ? network : transport;
  }
};

// The plan of `op` over `ranks` ranks. `nccl` collectives (the default) run what NCCL's tuner chooses for
// the size, ranks and fabric (sim/cost/nccl_tuner.hpp): the first of its ranked (algorithm, protocol) pairs that
// the profile and fabric can cost, NCCL's own first choice recorded, and the reason when it could not be
// run. `auto` collectives take the fastest plan on an idle fabric (an NCCL call with the framework's host time per
// call, as the custom kernels' latencies were measured): for all-reduces, the ring, one-shot up
// to the profile's one_shot_max_bytes, two-shot up to its two_shot_max_bytes where the profile has it,
// NVLS where the profile has it (from its min_ranks), and tree across nodes where it has a tree section;
// rings for all-gathers and reduce-scatters. A forced algorithm runs, or throws InputError naming what is
// missing (a profile section, an NVSwitch that reduces, one NVLink domain). All-to-alls and send/recvs
// always run as one step of NCCL point-to-point messages. A group that spans nodes needs the profile's
// network section (InputError otherwise).
// Rings cost their steps with the profile's regime for the protocol that runs: a forced protocol's
// (NCCL_PROTO: InputError when the profile has no such regime), NCCL's choice where the profile has
// labelled LL / LL128 regimes, else the faster of its unlabelled regimes (nccl.small_messages and Simple),
// as they were fitted. A forced protocol asks for NCCL: `auto` then leaves out the custom one-shot and
// two-shot kernels, and NVLS and tree (Simple only here) unless it is Simple.
// NCCL's collective calls (rings, NVLS, tree, all-to-all, send/recv) pay the profile's nccl call latency
// once; the custom one-shot / two-shot kernels and async-TP exchange steps (device-side steps of one
// pipeline, on SMs or copy engines) pay their per-step latency only.
CommPlan plan_communication(const model::Op& op, int ranks, const CostModel& cost);

// What ran, as NCCL's logs name it ("ring/LL", "nvls/Simple", "tree/LL128") where NCCL chose it; else
// the algorithm, and for rings the regime that costs them ("ring/simple", "ring/low_latency"); custom
// kernels and point-to-point messages by name ("one_shot", "two_shot", "point_to_point").
std::string ran_as(const CommPlan& plan);
// The profile section whose parameters cost the plan's steps: "nccl" (Simple), "nccl.small_messages",
// "nccl.ll", "nccl.ll128", "one_shot", "two_shot", "nvls", "tree", "copy_engine" (and "network" across nodes).
std::string costed_by(const CommPlan& plan);

// The plan's time alone on an idle fabric: its call latency, then per step the slowest rank's NVLink
// port or NIC.
double idle_seconds(const CommPlan& plan, const CostModel& cost);

}  // namespace tpsim::sim
