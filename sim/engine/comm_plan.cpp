// Ring, direct, NVLS and point-to-point plans, multi-node flows, and the auto rule that picks a plan.
#include "sim/engine/comm_plan.hpp"

#include "sim/report/collective_summary.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "base/input_error.hpp"
#include "base/units.hpp"
#include "sim/cost/collective_time.hpp"
#include "sim/cost/nccl_tuner.hpp"
#include "sim/cost/sm_sharing.hpp"
#include "sim/engine/plan_error.hpp"

namespace tpsim::sim {
namespace {

using model::CollectiveAlgorithm;
using model::CollectiveKind;

// The pattern's steps, messages and peers: the next `peers` ranks, from the previous `peers` ranks.
void take_pattern(const StepPattern& pattern, CommPlan& plan) {
  plan.steps = pattern.steps;
  plan.message_bytes = pattern.message_bytes;
  plan.send_offsets.clear();
  plan.recv_offsets.clear();
  for (int p = 1; p <= pattern.peers; ++p) {
    plan.send_offsets.push_back(p);
    plan.recv_offsets.push_back(-p);
  }
}

// What every plan over `ranks` ranks shares: where node boundaries are and how flows cross them.
bool is_all_reduce(const model::Op& op) {
  return op.collective == CollectiveKind::kAllReduce;
}

CommPlan base_plan(int ranks, const CostModel& cost) {
  CommPlan plan;
  plan.ranks = ranks;
  const Fabric& fabric = cost.fabric();
  if (!fabric.spans_nodes(ranks)) return plan;
  if (!cost.profile().network) {
    throw InputError("the calibration profile (" + cost.profile().name + ") has no network section, and " +
                     std::to_string(ranks) + " ranks span " + std::to_string(ranks / fabric.gpus_per_node) + " " +
                     fabric.name + " nodes; fit one with `tpsim calibrate` on multi-node all-reduce measurements");
  }
  plan.gpus_per_node = fabric.gpus_per_node;
  plan.network = *cost.profile().network;
  return plan;
}

CommPlan ring_plan(const model::Op& op, int ranks, const CostModel& cost) {
  CommPlan plan = base_plan(ranks, cost);
  plan.stripes_rails = plan.gpus_per_node > 0;
  plan.algorithm = CollectiveAlgorithm::kRing;
  take_pattern(ring_pattern(ring_step_count(op.collective, ranks), op.tensor_bytes, ranks), plan);
  const CostProfile& profile = cost.profile();
  plan.call_latency_s = profile.nccl_call_latency_s;
  plan.nccl_call = true;
  if (op.protocol != model::Protocol::kAuto) {
    if (const std::string why = protocol_unavailable_reason(profile, op.protocol); !why.empty()) {
      throw PlanError(PlanSetting::kProtocol, op.name, why);
    }
    const TransportParams* forced = protocol_regime(profile, op.protocol);
    plan.transport = *forced;
    plan.protocol = op.protocol;
    return plan;
  }
  plan.transport = profile.nccl;  // Simple, unless a low-latency regime is faster at this size
  CommPlan best = plan;
  double best_s = idle_seconds(plan, cost);
  for (const model::Protocol p : {model::Protocol::kLowLatency, model::Protocol::kLL, model::Protocol::kLL128}) {
    const TransportParams* regime = protocol_regime(profile, p);
    if (!regime) continue;
    CommPlan candidate = plan;
    candidate.transport = *regime;
    candidate.protocol = p;
    if (const double s = idle_seconds(candidate, cost); s < best_s) {
      best = std::move(candidate);
      best_s = s;
    }
  }
  return best;
}

CommPlan direct_plan(const model::Op& op, int ranks, const CostModel& cost) {
  CommPlan plan = base_plan(ranks, cost);
  plan.algorithm = CollectiveAlgorithm::kDirect;
  // All-reduce: every peer's whole tensor; all-gather / reduce-scatter: one 1/n block per peer.
  take_pattern(direct_pattern(op.collective, op.tensor_bytes, ranks), plan);
  plan.transport = *cost.profile().one_shot;
  return plan;
}

// Two-shot: a direct reduce-scatter then a direct all-gather, each a 1/n block to and from every peer.
CommPlan two_shot_plan(const model::Op& op, int ranks, const CostModel& cost) {
  CommPlan plan = base_plan(ranks, cost);  // not direct_plan: a profile may have two_shot without one_shot
  plan.algorithm = CollectiveAlgorithm::kTwoShot;
  take_pattern(two_shot_pattern(op.tensor_bytes, ranks), plan);
  plan.transport = *cost.profile().two_shot;
  return plan;
}

// NVLS: each GPU sends its tensor into the switch once and receives the reduced tensor once; as
// flows, 1/(n-1) of the tensor to and from every peer, so each port carries the tensor each way.
CommPlan nvls_plan(const model::Op& op, int ranks, const CostModel& cost) {
  CommPlan plan = base_plan(ranks, cost);
  plan.algorithm = CollectiveAlgorithm::kNvls;
  take_pattern(nvls_pattern(op.tensor_bytes, ranks), plan);
  plan.transport = *cost.profile().nvls;
  plan.call_latency_s = cost.profile().nccl_call_latency_s;
  plan.nccl_call = true;
  return plan;
}

// Symmetric-memory multicast kernels: an all-reduce as NVLS moves it, an all-gather or reduce-scatter as
// the direct pattern (each port's busier direction carries (n - 1) / n of the tensor); no NCCL call.
CommPlan multimem_plan(const model::Op& op, int ranks, const CostModel& cost) {
  CommPlan plan = base_plan(ranks, cost);
  plan.algorithm = CollectiveAlgorithm::kMultimem;
  take_pattern(multimem_pattern(op.collective, op.tensor_bytes, ranks), plan);
  plan.transport = is_all_reduce(op) ? *cost.profile().multimem : *cost.profile().multimem_gather;
  return plan;
}

// NCCL's tree all-reduce: chains inside nodes, a double binary tree across them, every hop on the
// profile's tree transport, the tensor in chunks of up to tree_chunk_bytes per tree.
CommPlan tree_plan(const model::Op& op, int ranks, const CostModel& cost) {
  // Assumed pipeline depth. In these lockstep steps every chunk pays the hop latency that NCCL
  // overlaps across its in-flight steps, so more chunks overcharge latency and fewer overcharge the
  // 2 x height - 1 fill and drain steps (17 on 4 nodes of 8). The tree fit goes through this same plan,
  // so a fitted tree section absorbs the choice.
  constexpr int kMaxChunks = 64;
  CommPlan plan = base_plan(ranks, cost);
  plan.algorithm = CollectiveAlgorithm::kTree;
  plan.transport = plan.network = *cost.profile().tree;
  plan.call_latency_s = cost.profile().nccl_call_latency_s;
  plan.nccl_call = true;
  plan.stripes_rails = plan.gpus_per_node > 0;
  const int per_node = plan.gpus_per_node > 0 ? plan.gpus_per_node : ranks;
  const int trees = ranks > per_node ? 2 : 1;
  const double per_tree = op.tensor_bytes / trees;
  const int chunks =
      static_cast<int>(std::clamp(std::ceil(per_tree / cost.profile().tree_chunk_bytes), 1.0, double{kMaxChunks}));
  plan.schedule = shared_double_binary_tree(ranks / per_node, per_node, chunks);
  plan.steps = static_cast<int>(plan.schedule->sends.size());
  plan.message_bytes = per_tree / chunks;
  return plan;
}

// All-to-all (NCCL's grouped send/recv): one step, a 1/n block to and from every peer. Send/recv: one
// step, the whole tensor to the next rank and from the previous one. Both on NCCL's kernels.
CommPlan point_to_point_plan(const model::Op& op, int ranks, const CostModel& cost) {
  CommPlan plan = base_plan(ranks, cost);
  plan.algorithm = CollectiveAlgorithm::kPointToPoint;
  plan.call_latency_s = cost.profile().nccl_call_latency_s;
  plan.nccl_call = true;
  take_pattern(op.collective == CollectiveKind::kSendRecv ? one_peer_pattern(op.tensor_bytes)
                                                          : direct_pattern(op.collective, op.tensor_bytes, ranks),
               plan);
  plan.transport = cost.profile().nccl;
  return plan;
}

}  // namespace

namespace {

// One rank's step alone: `local` messages through its NVLink port and `remote` through its NIC (every
// rail's NIC for striped plans, one sender per node and step), each on its transport; the slower.
double rank_step_seconds(const CommPlan& plan, const CostModel& cost, double local, double remote) {
  double seconds = 0;
  if (local > 0) seconds = step_seconds(plan.transport, local * plan.message_bytes, cost.port_Bps());
  if (remote > 0) {
    const double rails = plan.stripes_rails ? plan.gpus_per_node : 1.0;
    seconds = std::max(seconds, step_seconds(plan.network, remote * plan.message_bytes, rails * cost.fabric().nic_Bps));
  }
  return seconds;
}

// A scheduled plan: per step, the slowest rank, each link carrying the larger of what the rank sends
// and receives over it.
double idle_schedule_seconds(const CommPlan& plan, const CostModel& cost) {
  double total = 0;
  for (size_t step = 0; step < plan.schedule->sends.size(); ++step) {
    double step_s = 0;
    for (int rank = 0; rank < plan.ranks; ++rank) {
      double local_out = 0, local_in = 0, remote_out = 0, remote_in = 0;
      for (int dst : plan.schedule->sends[step][rank]) (plan.crosses_nodes(rank, dst) ? remote_out : local_out) += 1;
      for (int src : plan.schedule->recvs[step][rank]) (plan.crosses_nodes(src, rank) ? remote_in : local_in) += 1;
      step_s = std::max(step_s,
                        rank_step_seconds(plan, cost, std::max(local_out, local_in), std::max(remote_out, remote_in)));
    }
    total += step_s;
  }
  return total;
}

}  // namespace

double idle_seconds(const CommPlan& plan, const CostModel& cost) {
  if (plan.schedule) return plan.call_latency_s + idle_schedule_seconds(plan, cost);
  // Offset plans: every step alike, its time the slowest rank's (inside one node every rank is alike);
  // a step that sends nothing still pays the transport's latency.
  const int ranks_to_check = plan.gpus_per_node == 0 ? 1 : plan.ranks;
  double step_s = plan.send_offsets.empty() ? plan.transport.step_latency_s : 0;
  for (int rank = 0; rank < ranks_to_check; ++rank) {
    double local = 0, remote = 0;
    for (int offset : plan.send_offsets) {
      const int dst = ((rank + offset) % plan.ranks + plan.ranks) % plan.ranks;
      (plan.crosses_nodes(rank, dst) ? remote : local) += 1;
    }
    step_s = std::max(step_s, rank_step_seconds(plan, cost, local, remote));
  }
  return plan.call_latency_s + plan.steps * step_s;
}

namespace {

// Why the profile and fabric cannot run `algorithm` for `op` as tpsim models it; empty when they can.
std::string unavailable_reason(CollectiveAlgorithm algorithm, const model::Op& op, int ranks, const CostModel& cost) {
  const CostProfile& profile = cost.profile();
  const bool one_domain = !cost.fabric().spans_nodes(ranks);
  const std::string name = model::to_string(algorithm);
  const auto missing = [&](const std::string& section) {
    return "the calibration profile (" + profile.name + ") has no " + section +
           " section; fit one with `tpsim calibrate` on collectives run as " + name + ", or choose another algorithm";
  };
  switch (algorithm) {
    case CollectiveAlgorithm::kDirect:
      if (!one_domain) return name + " needs one NVLink domain, and " + std::to_string(ranks) + " ranks span nodes";
      return profile.one_shot ? "" : missing("one_shot");
    case CollectiveAlgorithm::kTwoShot:
      if (!is_all_reduce(op)) return name + " is an all-reduce kernel";
      if (!one_domain) return name + " needs one NVLink domain, and " + std::to_string(ranks) + " ranks span nodes";
      return profile.two_shot ? "" : missing("two_shot");
    case CollectiveAlgorithm::kNvls:
      if (!is_all_reduce(op)) return "NVLS all-gathers and reduce-scatters are not modelled (all-reduces are)";
      if (!cost.fabric().in_switch_reduction) return "the fabric has no NVSwitch that reduces (NVLS)";
      if (!one_domain) return "NVLS across nodes (NVLS-tree) is not modelled";
      return profile.nvls ? "" : missing("nvls");
    case CollectiveAlgorithm::kTree:
      if (!is_all_reduce(op)) return "NCCL's tree runs all-reduces only";
      return profile.tree ? "" : missing("tree");
    case CollectiveAlgorithm::kMultimem:
      if (!cost.fabric().in_switch_reduction) return "the fabric has no NVSwitch with multicast and reduction";
      if (!one_domain) return name + " needs one NVLink domain, and " + std::to_string(ranks) + " ranks span nodes";
      if (is_all_reduce(op)) return profile.multimem ? "" : missing("multimem");
      return profile.multimem_gather ? "" : missing("multimem_gather");
    default:
      return "";
  }
}

CommPlan plan_of(CollectiveAlgorithm algorithm, const model::Op& op, int ranks, const CostModel& cost) {
  switch (algorithm) {
    case CollectiveAlgorithm::kDirect:
      return direct_plan(op, ranks, cost);
    case CollectiveAlgorithm::kTwoShot:
      return two_shot_plan(op, ranks, cost);
    case CollectiveAlgorithm::kNvls:
      return nvls_plan(op, ranks, cost);
    case CollectiveAlgorithm::kTree:
      return tree_plan(op, ranks, cost);
    case CollectiveAlgorithm::kMultimem:
      return multimem_plan(op, ranks, cost);
    default:
      return ring_plan(op, ranks, cost);
  }
}

// The profile distinguishes NCCL's protocols (fitted on points that name them), so that NCCL's protocol
// choice decides which regime costs a ring.
bool has_labelled_protocols(const CostProfile& profile) {
  return profile.nccl_ll.has_value() || profile.nccl_ll128.has_value();
}

// A ring running NCCL's `protocol`, costed by the profile's regime for it; where the profile fitted its
// regimes on points that do not name their protocol (nccl.small_messages), by the faster of them, as
// fitted. Empty when the profile has no regime that stands for the protocol.
std::optional<CommPlan> ring_running(model::Protocol protocol, const model::Op& op, int ranks, const CostModel& cost) {
  if (op.protocol != model::Protocol::kAuto) return ring_plan(op, ranks, cost);  // forced: its regime, or an error
  const CostProfile& profile = cost.profile();
  model::Op as_run = op;
  if (const TransportParams* own = protocol_regime(profile, protocol);
      own && (protocol != model::Protocol::kSimple || !profile.nccl_small)) {
    as_run.protocol = protocol;
    return ring_plan(as_run, ranks, cost);
  }
  if (!profile.nccl_small) return std::nullopt;
  as_run.protocol = model::Protocol::kAuto;  // the faster of small_messages and Simple
  return ring_plan(as_run, ranks, cost);
}

// Why a collective did not run NCCL's own choice: the collective, NCCL's choice and the option that ran, with the
// time NCCL's own model gives each (the time at stake per call), and the reason.
std::string deviation_text(const model::Op& op, int ranks, const NcclOption& choice, const NcclOption& ran,
                           const std::string& reason) {
  const auto us = [](double s) { return model::format_number("%.1f", s * 1e6) + " us"; };
  const std::string chosen = nccl_option_name(choice.algorithm, choice.protocol);
  const std::string next = nccl_option_name(ran.algorithm, ran.protocol);
  return "NCCL runs " + chosen + " for the " + model::to_string(op.collective) + " of " +
         model::human_bytes(op.tensor_bytes) + " over " + std::to_string(ranks) + " GPUs (by NCCL's own model " +
         us(choice.predicted_s) + " a call, " + next + " " + us(ran.predicted_s) + "), but " + reason + "; ran " +
         next + ", NCCL's next choice";
}

// NCCL's choice among `allowed` algorithms (NCCL_ALGO), its protocol forced or not (NCCL_PROTO), run as
// the first pair in NCCL's ranking that the profile and fabric can cost; the plan records NCCL's own
// choice and, where it differs, why.
CommPlan nccl_plan(const model::Op& op, int ranks, const CostModel& cost,
                   const std::vector<CollectiveAlgorithm>& allowed) {
  const NcclSystem system = nccl_system(cost.gpu(), cost.fabric(), ranks);
  std::vector<NcclOption> ranking;
  for (const NcclOption& o : nccl_ranking(system, op.collective, op.tensor_bytes, op.protocol)) {
    if (std::find(allowed.begin(), allowed.end(), o.algorithm) != allowed.end()) ranking.push_back(o);
  }
  if (ranking.empty()) {
    throw InputError("NCCL has no " + model::to_string(op.collective) + " algorithm among those asked for here");
  }
  std::string first_reason;
  for (const NcclOption& option : ranking) {
    std::string reason = unavailable_reason(option.algorithm, op, ranks, cost);
    std::optional<CommPlan> plan;
    if (reason.empty()) {
      if (option.algorithm == CollectiveAlgorithm::kRing) {
        plan = ring_running(option.protocol, op, ranks, cost);
        if (!plan) reason = protocol_unavailable_reason(cost.profile(), option.protocol);
      } else {
        plan = plan_of(option.algorithm, op, ranks, cost);
      }
    }
    if (plan) {
      plan->nccl_choice = ranking.front();
      plan->nccl_run = option;
      if (&option != &ranking.front())
        plan->deviation = deviation_text(op, ranks, ranking.front(), option, first_reason);
      return *plan;
    }
    if (first_reason.empty()) first_reason = reason;
  }
  throw InputError(first_reason);
}

// `auto`: the fastest plan the profile has on an idle fabric, custom kernels included.
CommPlan fastest_plan(const model::Op& op, int ranks, const CostModel& cost) {
  const bool one_domain = !cost.fabric().spans_nodes(ranks);
  // A forced protocol other than Simple: NCCL's rings only (NVLS and tree run Simple here).
  const bool simple_allowed = op.protocol == model::Protocol::kAuto || op.protocol == model::Protocol::kSimple;
  const bool custom_allowed = op.protocol == model::Protocol::kAuto;  // one-shot, two-shot: not NCCL
  const auto possible = [&](CollectiveAlgorithm a) { return unavailable_reason(a, op, ranks, cost).empty(); };
  CommPlan best = ring_plan(op, ranks, cost);
  std::vector<CommPlan> candidates;
  if (custom_allowed && possible(CollectiveAlgorithm::kMultimem)) candidates.push_back(multimem_plan(op, ranks, cost));
  // The rest are all-reduce algorithms: an all-gather or reduce-scatter chooses between ring and multimem.
  const bool all_reduce = is_all_reduce(op);
  if (all_reduce && custom_allowed && possible(CollectiveAlgorithm::kDirect) &&
      op.tensor_bytes <= cost.profile().one_shot_max_bytes) {
    candidates.push_back(direct_plan(op, ranks, cost));
  }
  if (all_reduce && simple_allowed && possible(CollectiveAlgorithm::kNvls) && ranks >= cost.profile().nvls_min_ranks) {
    candidates.push_back(nvls_plan(op, ranks, cost));
  }
  if (all_reduce && custom_allowed && possible(CollectiveAlgorithm::kTwoShot) &&
      op.tensor_bytes <= cost.profile().two_shot_max_bytes) {
    candidates.push_back(two_shot_plan(op, ranks, cost));
  }
  if (all_reduce && simple_allowed && possible(CollectiveAlgorithm::kTree) && !one_domain) {
    candidates.push_back(tree_plan(op, ranks, cost));
  }
  // Ranked by their device times, as both NCCL's per-call time and the custom kernels' latencies were fitted (on
  // calls replayed from CUDA graphs or queued ahead of the GPU).
  for (CommPlan& candidate : candidates) {
    if (idle_seconds(candidate, cost) < idle_seconds(best, cost)) best = std::move(candidate);
  }
  return best;
}

}  // namespace

std::string ran_as(const CommPlan& plan) {
  if (plan.nccl_run) return nccl_option_name(plan.nccl_run->algorithm, plan.nccl_run->protocol);
  if (plan.algorithm == CollectiveAlgorithm::kRing) {
    return "ring/" + model::to_string(plan.protocol);
  }
  return model::to_string(plan.algorithm);
}

std::string costed_by(const CommPlan& plan) {
  std::string section;
  switch (plan.algorithm) {
    case CollectiveAlgorithm::kRing:
      section = plan.protocol == model::Protocol::kSimple       ? "nccl"
                : plan.protocol == model::Protocol::kLowLatency ? "nccl.small_messages"
                                                                : "nccl." + model::to_string(plan.protocol);
      break;
    case CollectiveAlgorithm::kDirect:
      section = "one_shot";
      break;
    case CollectiveAlgorithm::kPointToPoint:
      section = "nccl";
      break;
    case CollectiveAlgorithm::kDeepEpLowLatencyDispatch:
    case CollectiveAlgorithm::kDeepEpLowLatencyCombine:
      section = "deepep.low_latency";
      break;
    default:
      section = model::to_string(plan.algorithm);
  }
  if (!plan.uses_sms) section = "copy_engine";
  if (plan.gpus_per_node > 0 && plan.algorithm != CollectiveAlgorithm::kTree) section += " + network";
  return section;
}

namespace {

CommPlan plan_steps(const model::Op& op, int ranks, const CostModel& cost) {
  if (op.kind == model::OpKind::kExchange) {
    CommPlan plan = base_plan(ranks, cost);
    plan.steps = 1;
    if (op.send_offset != 0) plan.send_offsets = {op.send_offset};
    if (op.recv_offset != 0) plan.recv_offsets = {op.recv_offset};
    plan.message_bytes = op.message_bytes;
    plan.transport = cost.exchange_transport(op.transport);
    plan.uses_sms = op.transport == model::Transport::kSm;
    return plan;
  }
  if (op.collective == CollectiveKind::kAllToAll || op.collective == CollectiveKind::kSendRecv) {
    return point_to_point_plan(op, ranks, cost);  // one way to run them, whatever was asked
  }
  switch (op.algorithm) {
    case CollectiveAlgorithm::kNccl:
      return nccl_plan(op, ranks, cost,
                       {CollectiveAlgorithm::kTree, CollectiveAlgorithm::kRing, CollectiveAlgorithm::kNvls});
    case CollectiveAlgorithm::kAuto:
    case CollectiveAlgorithm::kPointToPoint:  // only all-to-alls and send/recvs, handled above
      return fastest_plan(op, ranks, cost);
    case CollectiveAlgorithm::kRing:
      // NCCL_ALGO=Ring: NCCL's protocol where the profile tells protocols apart, else its regimes as fitted.
      if (op.protocol == model::Protocol::kAuto && has_labelled_protocols(cost.profile())) {
        return nccl_plan(op, ranks, cost, {CollectiveAlgorithm::kRing});
      }
      return ring_plan(op, ranks, cost);
    default:
      break;
  }
  if (const std::string why = unavailable_reason(op.algorithm, op, ranks, cost); !why.empty()) {
    throw InputError("algorithm " + model::to_string(op.algorithm) + ": " + why);
  }
  return plan_of(op.algorithm, op, ranks, cost);
}

// HBM accesses per link byte of what runs (sim/cost/hbm_traffic.hpp): NCCL's rings and send/recv (async-TP
// exchange steps over SMs among them) stage theirs in FIFO buffers; copy engines, trees, NVLS and the custom kernels
// count as copies.
double hbm_accesses_per_link_byte(const model::Op& op, const CommPlan& plan) {
  if (!plan.uses_sms) return kCopyHbmAccessesPerLinkByte;
  if (op.kind == model::OpKind::kExchange || plan.algorithm == CollectiveAlgorithm::kPointToPoint) {
    return point_to_point_hbm_accesses_per_link_byte(plan.protocol);
  }
  if (plan.algorithm == CollectiveAlgorithm::kRing && plan.nccl_call) {
    return ring_hbm_accesses_per_link_byte(op.collective, plan.protocol, plan.ranks);
  }
  return kCopyHbmAccessesPerLinkByte;
}

}  // namespace

CommPlan plan_communication(const model::Op& op, int ranks, const CostModel& cost) {
  if (ranks < 2) return CommPlan{};
  CommPlan plan = plan_steps(op, ranks, cost);
  plan.hbm_accesses_per_link_byte = hbm_accesses_per_link_byte(op, plan);
  if (plan.uses_sms) {
    // Async-TP exchange steps over SMs are NCCL send/recv calls (model/program_builder.hpp).
    const model::CollectiveAlgorithm kernel =
        op.kind == model::OpKind::kExchange ? model::CollectiveAlgorithm::kPointToPoint : plan.algorithm;
    plan.sms =
        op.comm_sms > 0 ? op.comm_sms : nccl_kernel_sms(cost.profile(), kernel, plan.protocol, op.tensor_bytes, ranks);
  }
  return plan;
}

}  // namespace tpsim::sim
