// The discrete-event engine: dependency counting, rendezvous of communication steps, and the SMs comm kernels hold
// and the power transfers draw (runner/) as kernels and flows start and end.
#include "sim/engine/engine.hpp"

#include "sim/engine/comm_plan.hpp"
#include "sim/engine/member_placement.hpp"
#include "sim/engine/runner/completions.hpp"
#include "sim/engine/runner/host_launch.hpp"
#include "sim/engine/runner/port_power.hpp"
#include "sim/engine/runner/sm_holdings.hpp"

#include <xbt/log.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace tpsim::sim {
namespace {

namespace s4u = simgrid::s4u;
using model::Op;
using model::OpId;

struct Instance {
  int pending = 0;
  double gate_s = 0;  // the earliest start its same-GPU dependencies on other streams allow (GPU wait)
  int step = -1;
  int flows_left = 0;
  double start_s = -1;
  double end_s = -1;
};

// The simulation of one program: its GPUs placed by MemberPlacement.
class Runner : private MemberPlacement {
 public:
  Runner(const model::LayerGraph& graph, const CostModel& cost, const Platform& platform, const EngineOptions& options,
         std::shared_ptr<const std::vector<CommPlan>> plans)
      : MemberPlacement(graph, options),
        cost_(cost),
        platform_(platform),
        options_(options),
        shared_plans_(std::move(plans)),
        plans_(*shared_plans_),
        completions_([this](Completion::Kind kind, OpId id, int src, int dst) { over(kind, id, src, dst); }),
        port_power_(cost, platform.states, gpu_hosts()),
        sm_holdings_(graph, cost, ranks_) {
    const size_t count = graph.size();
    instances_.resize(count * ranks_);
    successors_.resize(count);
    for (OpId id = 0; id < count; ++id) {
      const Op& op = graph.op(id);
      for (const model::Dep& dep : op.deps) successors_[dep.op].push_back(model::Dep{id, dep.rank_offset});
      for (int stage = 0; stage < stages_; ++stage) {
        if (!model::runs_on_stage(op, stage)) continue;
        // A dependency on an op of another stage is none (a send runs on both).
        const auto pending = static_cast<int>(std::count_if(op.deps.begin(), op.deps.end(), [&](const model::Dep& dep) {
          return model::runs_on_stage(graph.op(dep.op), stage);
        }));
        for (int r = stage * replicas_ * tp_; r < (stage + 1) * replicas_ * tp_; ++r) instance(id, r).pending = pending;
      }
    }
    idle_costs_.resize(count);
    launched_s_ = host_launch_times(graph, plans_, options_, stages_);
  }

  Timeline run() {
    completions_.listen();
    for (OpId id = 0; id < graph_.size(); ++id) {
      for (int r = 0; r < ranks_; ++r) {
        if (instance(id, r).pending == 0 && runs_on(id, r)) start(id, r);
      }
    }
    s4u::Engine::get_instance()->run();
    completions_.release();
    return collect();
  }

 private:
  Instance& instance(OpId op, int rank) { return instances_[static_cast<size_t>(op) * ranks_ + rank]; }

  s4u::Host* gpu(int g) const { return platform_.gpus[host_index(g)]; }
  std::vector<s4u::Host*> gpu_hosts() const {
    std::vector<s4u::Host*> hosts;
    for (int r = 0; r < ranks_; ++r) hosts.push_back(gpu(r));
    return hosts;
  }
  bool crosses_nodes(OpId id, int src, int dst) const {
    return MemberPlacement::crosses_nodes(id, src, dst, plans_[id],
                                          options_.data_group ? &options_.data_group->fabric : nullptr);
  }
  const TransportParams& flow_transport(OpId id, int src, int dst) const {
    return crosses_nodes(id, src, dst) ? plans_[id].network : plans_[id].transport;
  }

  // An op cannot start before the host has launched it, nor before the GPU has resolved its waits on
  // other streams.
  void start(OpId id, int rank) {
    const double wait_s =
        std::max(launched_s_[id * stages_ + stage_of(rank)], instance(id, rank).gate_s) - s4u::Engine::get_clock();
    if (wait_s > 0) {
      completions_.wait(wait_s, Completion::Kind::kLaunchGate, id, rank, rank);
      return;
    }
    begin(id, rank);
  }

  void begin(OpId id, int rank) {
    const Op& op = graph_.op(id);
    instance(id, rank).start_s = s4u::Engine::get_clock();
    if (model::is_kernel(op.kind)) {
      start_kernel(id, rank, op);
      return;
    }
    if (plans_[id].uses_sms) change_comm_sms(rank, plans_[id].sms);
    // The call's own latency comes first; a rank is not at step 0 (no flow can start) until it is over.
    const double latency_s = plans_[id].outside ? plans_[id].outside->latency_s : plans_[id].call_latency_s;
    if (latency_s > 0) {
      completions_.wait(latency_s, Completion::Kind::kCallLatency, id, rank, rank);
      return;
    }
    enter_step(id, rank, 0);
  }

  // The kernel's cost on this GPU: its idle cost, each part times the run's skew factor for (op, rank).
  KernelCost kernel_cost(OpId id, int rank, const Op& op) const {
    KernelCost k = idle_cost(id, op);
    if (!options_.skew.enabled()) return k;
    const double factor = model::skew_factor(options_.skew, id, rank);
    k.overhead_s *= factor;
    k.compute_s *= factor;
    k.memory_s *= factor;
    return k;
  }

  // The kernel's cost alone on an idle GPU, computed at its first instance (the same on every rank).
  const KernelCost& idle_cost(OpId id, const Op& op) const {
    std::optional<KernelCost>& known = idle_costs_[id];
    if (!known) known = cost_.kernel_cost(op);
    return *known;
  }

  // Compute-bound kernels run on the SMs (slowed while comm kernels hold some, and by the power transfers
  // beside them draw); memory-bound ones, after their launch overhead, move their bytes through the GPU's
  // HBM link, shared with NVLink traffic (so copy-engine transfers slow them) and unaffected by SM contention.
  void start_kernel(OpId id, int rank, const Op& op) {
    const KernelCost k = kernel_cost(id, rank, op);
    if (!k.memory_bound()) {
      auto exec = s4u::Exec::init();
      exec->set_host(gpu(rank))->set_flops_amount((k.overhead_s + k.compute_s) * kWorkRate);
      sm_holdings_.start_compute(id, rank);
      completions_.launch(exec, Completion::Kind::kComputeKernel, id, rank, rank);
      return;
    }
    if (k.overhead_s > 0) {
      completions_.wait(k.overhead_s, Completion::Kind::kKernelOverhead, id, rank, rank);
      return;
    }
    start_memory_traffic(id, rank);
  }

  void start_memory_traffic(OpId id, int rank) {
    const KernelCost k = kernel_cost(id, rank, graph_.op(id));
    // Scaled so that alone it takes memory_s over a link of HBM x the profile's memory efficiency.
    const double payload = k.memory_s * kHbmLinkBps(cost_);
    auto comm = s4u::Comm::sendto_init(gpu(rank), platform_.memories[host_index(rank)]);
    comm->set_payload_size(static_cast<uint64_t>(std::llround(payload)));
    completions_.launch(comm, Completion::Kind::kKernel, id, rank, rank);
  }

  // Comm kernels take or give back `delta` SMs: the compute-bound kernels running meanwhile share them, and the
  // GPU's power state follows.
  void change_comm_sms(int rank, int delta) {
    sm_holdings_.change_comm_sms(rank, delta);
    port_power_.update(rank, sm_holdings_.comm_sms()[rank]);
  }

  // A compute-bound kernel's work is done: a GEMM that shared its SMs ends its tail later (sm_sharing.hpp).
  void compute_done(OpId id, int rank) {
    const double tail_s =
        sm_holdings_.end_compute(id, rank) ? sm_holdings_.shared_tail_s(id, kernel_cost(id, rank, graph_.op(id))) : 0.0;
    if (tail_s > 0) {
      completions_.wait(tail_s, Completion::Kind::kSharedTail, id, rank, rank);
      return;
    }
    finish(id, rank);
  }

  // A flow's data rate alone: its link (the port, or the NIC between nodes) times its transport's efficiency.
  double flow_data_Bps(OpId id, int src, int dst) const {
    const double link_Bps = crosses_nodes(id, src, dst) ? cost_.fabric().nic_Bps : cost_.port_Bps();
    return link_Bps * flow_transport(id, src, dst).link_efficiency;
  }

  // A flow starts or ends moving data: the power its two ends draw for it changes (port_power.hpp).
  void change_port_traffic(OpId id, int src, int dst, bool starts) {
    if (!port_power_.draws_power()) return;
    port_power_.change_traffic(src, dst, flow_data_Bps(id, src, dst), plans_[id].hbm_accesses_per_link_byte, starts,
                               sm_holdings_.comm_sms());
  }

  void enter_step(OpId id, int rank, int step) {
    const CommPlan& plan = plans_[id];
    if (step >= plan.steps) {
      finish(id, rank);
      return;
    }
    Instance& self = instance(id, rank);
    self.step = step;
    if (plan.outside) {
      start_outside_flows(id, rank, *plan.outside);
      return;
    }
    if (plan.schedule) {
      enter_scheduled_step(id, rank, step, *plan.schedule);
      return;
    }
    self.flows_left = static_cast<int>(plan.send_offsets.size() + plan.recv_offsets.size());
    // A flow starts once both its ends have reached this step; whichever arrives second starts it.
    for (int offset : plan.send_offsets) {
      const int dst = peer_at(id, rank, offset);
      if (instance(id, dst).step == step) start_flow(id, rank, dst);
    }
    for (int offset : plan.recv_offsets) {
      const int src = peer_at(id, rank, offset);
      if (instance(id, src).step == step) start_flow(id, src, rank);
    }
  }

  // As above, with each rank's peers from the plan's schedule; a rank without any at a step moves on.
  void enter_scheduled_step(OpId id, int rank, int step, const PeerSchedule& schedule) {
    const std::vector<int>& sends = schedule.sends[step][group_index(id, rank)];
    const std::vector<int>& recvs = schedule.recvs[step][group_index(id, rank)];
    instance(id, rank).flows_left = static_cast<int>(sends.size() + recvs.size());
    if (sends.empty() && recvs.empty()) {
      enter_step(id, rank, step + 1);
      return;
    }
    for (int index : sends) {
      const int dst = group_peer(id, rank, index);
      if (instance(id, dst).step == step) start_flow(id, rank, dst);
    }
    for (int index : recvs) {
      const int src = group_peer(id, rank, index);
      if (instance(id, src).step == step) start_flow(id, src, rank);
    }
  }

  void start_flow(OpId id, int src, int dst) {
    const double latency = flow_transport(id, src, dst).step_latency_s;
    if (latency > 0) {
      completions_.wait(latency, Completion::Kind::kFlowLatency, id, src, dst);
      return;
    }
    start_transfer(id, src, dst);
  }

  void start_transfer(OpId id, int src, int dst) {
    const CommPlan& plan = plans_[id];
    const double wire_bytes = plan.message_bytes / flow_transport(id, src, dst).link_efficiency;
    change_port_traffic(id, src, dst, true);
    if (!plan.stripes_rails || !crosses_nodes(id, src, dst)) {
      completions_.launch(transfer(src, dst, wire_bytes), Completion::Kind::kFlow, id, src, dst);
      return;
    }
    // NCCL's channels use every NIC of the node: the hop moves as one part per rail, the group's k-th GPU
    // of the source node to its k-th of the destination node, over those GPUs' NICs.
    const int rails = plan.gpus_per_node;
    const int src_base = group_index(id, src) / rails * rails, dst_base = group_index(id, dst) / rails * rails;
    auto parts_left = std::make_shared<int>(rails);
    for (int k = 0; k < rails; ++k) {
      completions_.launch(
          transfer(group_peer(id, src, src_base + k), group_peer(id, dst, dst_base + k), wire_bytes / rails),
          Completion::Kind::kFlow, id, src, dst, parts_left);
    }
  }

  // A collective over a group outside the simulated one, after its latency: its bytes out of and into the GPU
  // through its own link to the group, both at once; then it is over (one step).
  void start_outside_flows(OpId id, int rank, const CommPlan::OutsideGroup& outside) {
    if (instance(id, rank).step > 0) {
      finish(id, rank);
      return;
    }
    instance(id, rank).flows_left = 2;
    s4u::Host* group = outside.network ? platform_.outside_network : platform_.outside_nvlink;
    const auto bytes = static_cast<uint64_t>(std::llround(outside.link_bytes));
    for (const bool out : {true, false}) {
      auto comm = out ? s4u::Comm::sendto_init(gpu(rank), group) : s4u::Comm::sendto_init(group, gpu(rank));
      comm->set_payload_size(bytes);
      completions_.launch(comm, Completion::Kind::kOutsideFlow, id, rank, rank);
    }
  }

  s4u::CommPtr transfer(int src, int dst, double bytes) {
    auto comm = s4u::Comm::sendto_init(gpu(src), gpu(dst));
    comm->set_payload_size(static_cast<uint64_t>(std::llround(bytes)));
    return comm;
  }

  // An activity or a wait of op `id` (ranks src -> dst) is over.
  void over(Completion::Kind kind, OpId id, int src, int dst) {
    switch (kind) {
      case Completion::Kind::kLaunchGate:
        begin(id, src);
        break;
      case Completion::Kind::kKernelOverhead:
        start_memory_traffic(id, src);
        break;
      case Completion::Kind::kKernel:
      case Completion::Kind::kSharedTail:
        finish(id, src);
        break;
      case Completion::Kind::kComputeKernel:
        compute_done(id, src);
        break;
      case Completion::Kind::kCallLatency:
        enter_step(id, src, 0);
        break;
      case Completion::Kind::kFlowLatency:
        start_transfer(id, src, dst);
        break;
      case Completion::Kind::kFlow:
        change_port_traffic(id, src, dst, false);
        flow_done(id, src);
        flow_done(id, dst);
        break;
      case Completion::Kind::kOutsideFlow:
        flow_done(id, src);
        break;
    }
  }

  void flow_done(OpId id, int rank) {
    Instance& self = instance(id, rank);
    if (--self.flows_left == 0) enter_step(id, rank, self.step + 1);
  }

  void finish(OpId id, int rank) {
    const Op& op = graph_.op(id);
    Instance& self = instance(id, rank);
    self.end_s = s4u::Engine::get_clock();
    self.step = plans_[id].steps;  // past the last step: no later rendezvous can match it
    if (model::is_communication(op.kind) && plans_[id].uses_sms) change_comm_sms(rank, -plans_[id].sms);
    for (const model::Dep& succ : successors_[id]) {
      const int target = rank / tp_ * tp_ + ((rank % tp_ - succ.rank_offset) % tp_ + tp_) % tp_;
      if (!runs_on(succ.op, target)) continue;
      Instance& next = instance(succ.op, target);
      if (waits_across_streams(graph_, graph_.op(succ.op), model::Dep{id, succ.rank_offset})) {
        next.gate_s = std::max(next.gate_s, self.end_s + options_.gpu_wait_s);
      }
      if (--next.pending == 0) start(succ.op, target);
    }
  }

  Timeline collect() {
    Timeline timeline;
    timeline.ranks = ranks_;
    timeline.plans = shared_plans_;
    timeline.spans.reserve(instances_.size());
    for (OpId id = 0; id < graph_.size(); ++id) {
      for (int r = 0; r < ranks_; ++r) {
        if (!runs_on(id, r)) continue;
        const Instance& inst = instance(id, r);
        if (inst.end_s < 0) {
          throw std::logic_error("simulation ended with op " + graph_.op(id).name + " on GPU " + std::to_string(r) +
                                 " unfinished (a deadlocked program)");
        }
        timeline.spans.push_back({id, r, inst.start_s, inst.end_s});
        timeline.makespan_s = std::max(timeline.makespan_s, inst.end_s);
      }
    }
    return timeline;
  }

  const CostModel& cost_;
  const Platform& platform_;
  EngineOptions options_;
  std::vector<Instance> instances_;
  std::shared_ptr<const std::vector<CommPlan>> shared_plans_;
  const std::vector<CommPlan>& plans_;
  std::vector<std::vector<model::Dep>> successors_;
  mutable std::vector<std::optional<KernelCost>> idle_costs_;  // per op, once known
  std::vector<double> launched_s_;  // per op and stage: host time at which the stage's host has launched it
  Completions completions_;
  PortPower port_power_;
  SmHoldings sm_holdings_;
};

}  // namespace

Timeline simulate_in_this_process(const model::LayerGraph& graph, const CostModel& cost, const EngineOptions& options,
                                  std::shared_ptr<const std::vector<CommPlan>> plans) {
  if (!plans) plans = plan_program(graph, cost, options.data_group.has_value());
  xbt_log_control_set("root.thresh:critical");
  int argc = 1;
  char name[] = "tpsim";
  char* argv[] = {name, nullptr};
  s4u::Engine engine(&argc, argv);
  configure_engine(engine);
  const bool outside_groups = std::any_of(plans->begin(), plans->end(), [](const CommPlan& p) { return p.outside; });
  // --no-symmetry: the platform holds the job's GPUs up to the last stage's last replica's TP group.
  const MemberPlacement placement(graph, options);
  const JobMembers* members = options.data_group ? &*options.data_group : nullptr;
  const Fabric* job = members ? &members->fabric : nullptr;
  std::vector<int> comm_sms;
  for (const CommPlan& plan : *plans) {
    if (plan.uses_sms && std::find(comm_sms.begin(), comm_sms.end(), plan.sms) == comm_sms.end()) {
      comm_sms.push_back(plan.sms);
    }
  }
  const Platform platform =
      build_platform(placement.platform_gpus(), members ? CostModel(cost.gpu(), cost.profile(), *job) : cost,
                     outside_groups, placement.flow_routes(*plans, job), comm_sms);
  Runner runner(graph, cost, platform, options, std::move(plans));
  return runner.run();
}

}  // namespace tpsim::sim
