// The discrete-event engine: dependency counting, rendezvous of communication steps, SM contention, and
// the power transfers take from compute beside them.
#include "sim/engine/engine.hpp"

#include "base/limits.hpp"
#include "sim/cost/sm_sharing.hpp"
#include "sim/engine/comm_plan.hpp"
#include "sim/engine/data_group.hpp"
#include "sim/engine/member_placement.hpp"
#include "sim/engine/plan_error.hpp"
#include "sim/engine/port_power.hpp"

#include <xbt/log.h>
#include <simgrid/kernel/Timer.hpp>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

namespace tpsim::sim {
namespace {

namespace s4u = simgrid::s4u;
using model::Op;
using model::OpId;
using model::OpKind;

// Whether `op` waits, on its own GPU, for op `dep` of another stream: the host records an event and
// waits on it, and the GPU resolves that wait.
bool waits_across_streams(const model::LayerGraph& graph, const Op& op, const model::Dep& dep) {
  return dep.rank_offset == 0 && graph.op(dep.op).stream != op.stream;
}

struct Instance {
  int pending = 0;
  double gate_s = 0;  // the earliest start its same-GPU dependencies on other streams allow (GPU wait)
  int step = -1;
  int flows_left = 0;
  double start_s = -1;
  double end_s = -1;
  bool shared_sms = false;  // a compute-bound kernel that ran while comm kernels held some of its GPU's SMs
};

// What the end of an activity or of a pure wait means.
struct Completion {
  enum class Kind {
    kLaunchGate,
    kKernelOverhead,
    kKernel,
    kComputeKernel,
    kSharedTail,
    kCallLatency,
    kFlowLatency,
    kFlow,
    kOutsideFlow
  } kind = Kind::kKernel;
  OpId op = 0;
  int src = 0;  // kernel: its rank
  int dst = 0;
  s4u::ActivityPtr activity;
  // A flow carried as several parallel parts (one per rail): the parts still in flight, shared.
  std::shared_ptr<int> parts_left;
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
        port_power_(cost, platform.states, gpu_hosts()) {
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
    tilings_.resize(count);
    comm_sms_.assign(ranks_, 0);
    running_compute_.resize(ranks_);
    // The host (each stage's) issues ops in program order: each costs a launch, a wait per dependency on another
    // stream of the same rank, and for an NCCL call the framework's own host time; op `id` is launched once
    // all of that before it (and its own) is done.
    launched_s_.resize(count * stages_);
    for (int stage = 0; stage < stages_; ++stage) {
      double host_s = 0;
      for (OpId id = 0; id < count; ++id) {
        const Op& op = graph.op(id);
        if (!model::runs_on_stage(op, stage)) continue;
        if (op.continues_kernel) {
          // A later part of a tile-fused kernel the host launched with its first part (the part's waits on
          // other streams are the kernel's own signal waits on the GPU, launch.gpu_wait_us, not host events), or
          // memory-bound work fused into the kernel before it.
          launched_s_[id * stages_ + stage] = host_s;
          continue;
        }
        int waits = 0;
        for (const model::Dep& dep : op.deps) {
          if (waits_across_streams(graph, op, dep) && model::runs_on_stage(graph.op(dep.op), stage)) ++waits;
        }
        host_s += options_.host_launch_s + waits * options_.stream_wait_s;
        if (plans_[id].nccl_call) host_s += options_.collective_host_s;
        launched_s_[id * stages_ + stage] = host_s;
      }
    }
  }

  Timeline run() {
    s4u::Activity::on_completion_cb(
        [this](s4u::Activity const& activity) { on_complete(*activity.get_data<Completion>()); });
    for (OpId id = 0; id < graph_.size(); ++id) {
      for (int r = 0; r < ranks_; ++r) {
        if (instance(id, r).pending == 0 && runs_on(id, r)) start(id, r);
      }
    }
    s4u::Engine::get_instance()->run();
    released_.clear();
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

  // A completion record, reusing one whose activity is over: the engine holds as many as activities in flight.
  Completion* track(Completion completion) {
    if (!free_completions_.empty()) {
      Completion* reused = free_completions_.back();
      free_completions_.pop_back();
      *reused = std::move(completion);
      return reused;
    }
    completions_.push_back(std::move(completion));
    return &completions_.back();
  }

  // Starts `activity`; its completion is dispatched as `kind` for op `id` (ranks src -> dst).
  void launch(const s4u::ActivityPtr& activity, Completion::Kind kind, OpId id, int src, int dst,
              std::shared_ptr<int> parts_left = nullptr) {
    Completion* done = track({kind, id, src, dst, activity, std::move(parts_left)});
    activity->set_data(done);
    activity->start();
  }

  // A pure wait of `seconds`: a SimGrid timer, no activity (nothing shares it, so nothing is solved for it). At its
  // date its end is handled before the activities that end at the same date.
  void wait(double seconds, Completion::Kind kind, OpId id, int src, int dst) {
    simgrid::kernel::timer::Timer::set(s4u::Engine::get_clock() + seconds,
                                       [this, kind, id, src, dst] { over(kind, id, src, dst); });
  }

  // An op cannot start before the host has launched it, nor before the GPU has resolved its waits on
  // other streams.
  void start(OpId id, int rank) {
    const double wait_s =
        std::max(launched_s_[id * stages_ + stage_of(rank)], instance(id, rank).gate_s) - s4u::Engine::get_clock();
    if (wait_s > 0) {
      wait(wait_s, Completion::Kind::kLaunchGate, id, rank, rank);
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
      wait(latency_s, Completion::Kind::kCallLatency, id, rank, rank);
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

  // A GEMM's tiling, computed at its first use (other kernels: none).
  const GemmTiling& tiling(OpId id) const {
    std::optional<GemmTiling>& known = tilings_[id];
    if (!known) {
      const Op& op = graph_.op(id);
      known = op.kind == OpKind::kGemm ? cost_.gemm_tiling(op.gemm) : GemmTiling{};
    }
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
      instance(id, rank).shared_sms = comm_sms_[rank] > 0 && spills(id, rank);
      running_compute_[rank].push_back(id);
      launch(exec, Completion::Kind::kComputeKernel, id, rank, rank);
      return;
    }
    if (k.overhead_s > 0) {
      wait(k.overhead_s, Completion::Kind::kKernelOverhead, id, rank, rank);
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
    launch(comm, Completion::Kind::kKernel, id, rank, rank);
  }

  // Comm kernels take or give back `delta` SMs: the compute-bound kernels running meanwhile share them.
  void change_comm_sms(int rank, int delta) {
    comm_sms_[rank] += delta;
    if (delta > 0) {
      for (OpId running : running_compute_[rank]) {
        if (spills(running, rank)) instance(running, rank).shared_sms = true;
      }
    }
    port_power_.update(rank, comm_sms_[rank]);
  }

  // Whether compute-bound op `id` has CTAs on the SMs the comm kernels running on `rank` hold (sm_sharing.hpp).
  bool spills(OpId id, int rank) const {
    return spills_past_sms(graph_.op(id), tiling(id), cost_.gpu().sm_count - comm_sms_[rank]);
  }

  // A compute-bound kernel's work is done: a GEMM that shared its SMs ends its tail later (sm_sharing.hpp).
  void compute_done(OpId id, int rank) {
    std::vector<OpId>& running = running_compute_[rank];
    running.erase(std::find(running.begin(), running.end(), id));
    const double tail_s =
        instance(id, rank).shared_sms
            ? shared_tail_seconds(cost_.profile(), graph_.op(id), tiling(id), kernel_cost(id, rank, graph_.op(id)))
            : 0.0;
    if (tail_s > 0) {
      wait(tail_s, Completion::Kind::kSharedTail, id, rank, rank);
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
                               comm_sms_);
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
      wait(latency, Completion::Kind::kFlowLatency, id, src, dst);
      return;
    }
    start_transfer(id, src, dst);
  }

  void start_transfer(OpId id, int src, int dst) {
    const CommPlan& plan = plans_[id];
    const double wire_bytes = plan.message_bytes / flow_transport(id, src, dst).link_efficiency;
    change_port_traffic(id, src, dst, true);
    if (!plan.stripes_rails || !crosses_nodes(id, src, dst)) {
      launch(transfer(src, dst, wire_bytes), Completion::Kind::kFlow, id, src, dst);
      return;
    }
    // NCCL's channels use every NIC of the node: the hop moves as one part per rail, the group's k-th GPU
    // of the source node to its k-th of the destination node, over those GPUs' NICs.
    const int rails = plan.gpus_per_node;
    const int src_base = group_index(id, src) / rails * rails, dst_base = group_index(id, dst) / rails * rails;
    auto parts_left = std::make_shared<int>(rails);
    for (int k = 0; k < rails; ++k) {
      launch(transfer(group_peer(id, src, src_base + k), group_peer(id, dst, dst_base + k), wire_bytes / rails),
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
      launch(comm, Completion::Kind::kOutsideFlow, id, rank, rank);
    }
  }

  s4u::CommPtr transfer(int src, int dst, double bytes) {
    auto comm = s4u::Comm::sendto_init(gpu(src), gpu(dst));
    comm->set_payload_size(static_cast<uint64_t>(std::llround(bytes)));
    return comm;
  }

  void on_complete(Completion& done) {
    // SimGrid still uses an activity while its completion callback runs, so it is released at the
    // next callback, when its handling is over.
    released_.clear();
    released_.push_back(std::move(done.activity));
    // A flow carried in parts is over with its last part.
    if (!done.parts_left || --*done.parts_left == 0) over(done.kind, done.op, done.src, done.dst);
    done.parts_left.reset();
    free_completions_.push_back(&done);
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
  mutable std::vector<std::optional<GemmTiling>> tilings_;     // per op, once known
  std::vector<int> comm_sms_;                                  // per GPU: the SMs its running comm kernels hold
  std::vector<std::vector<OpId>> running_compute_;             // per GPU: its compute-bound kernels running
  std::vector<double> launched_s_;  // per op and stage: host time at which the stage's host has launched it
  std::deque<Completion> completions_;
  std::vector<Completion*> free_completions_;  // records of completed activities, for reuse
  std::vector<s4u::ActivityPtr> released_;
  PortPower port_power_;
};

}  // namespace

namespace {

// A step repeats its data-group collectives (each layer's, each micro-batch's): planned once per kind and size.
using DataPlans = std::map<std::tuple<model::CommGroup, model::CollectiveKind, double, int, int>, CommPlan>;

CommPlan plan_op(const Op& op, int tp, const CostModel& cost, bool data_group_members, DataPlans& data_plans) {
  if (op.group == model::CommGroup::kTensor) {
    // A group too large to run step by step between its ranks takes the closed form.
    const CommPlan plan = plan_communication(op, tp, cost);
    return stepped_flows(plan) > model::kMaxSteppedFlows ? in_closed_form(plan, op, tp, cost) : plan;
  }
  if (op.group == model::CommGroup::kPipeline) return plan_pipeline_send(op, cost);
  // The expert-parallel group's all-to-alls run in closed form even under --no-symmetry (its members are
  // other replicas' ranks, which only the data group's are simulated as).
  if (model::is_deepep(op.algorithm)) return plan_deepep(op, cost);
  const bool steps = data_group_members && op.group == model::CommGroup::kData;
  const auto key = std::make_tuple(op.group, op.collective, op.tensor_bytes, op.group_size, op.group_stride);
  auto found = data_plans.find(key);
  if (found == data_plans.end()) {
    found = data_plans.emplace(key, steps ? plan_data_group_steps(op, cost) : plan_data_group(op, cost)).first;
  }
  return found->second;
}

// What asked for a collective that cannot run: the setting a plan error names, else the op's own algorithm, else
// its own protocol, else neither (NCCL's choice on what the profile and fabric give).
PlanSetting setting_asking(const Op& op, const InputError& error) {
  if (const auto* plan = dynamic_cast<const PlanError*>(&error)) return plan->setting();
  if (op.algorithm != model::CollectiveAlgorithm::kNccl && op.algorithm != model::CollectiveAlgorithm::kAuto) {
    return PlanSetting::kAlgorithm;
  }
  return op.protocol != model::Protocol::kAuto ? PlanSetting::kProtocol : PlanSetting::kProfile;
}

}  // namespace

std::shared_ptr<const std::vector<CommPlan>> plan_program(const model::LayerGraph& graph, const CostModel& cost,
                                                          bool data_group_members) {
  auto plans = std::make_shared<std::vector<CommPlan>>(graph.size());
  DataPlans data_plans;
  for (OpId id = 0; id < graph.size(); ++id) {
    const Op& op = graph.op(id);
    if (!model::is_communication(op.kind)) continue;
    try {
      (*plans)[id] = plan_op(op, graph.tp(), cost, data_group_members, data_plans);
    } catch (const InputError& error) {
      if (error.detail() != error.what()) throw;  // located already
      throw PlanError(setting_asking(op, error), op.name, error.what());
    }
  }
  return plans;
}

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
