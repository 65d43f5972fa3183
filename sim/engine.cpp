// The discrete-event engine: dependency counting, rendezvous of communication steps, SM contention.
#include "sim/engine.hpp"

#include <xbt/log.h>

#include <cmath>
#include <deque>
#include <stdexcept>
#include <string>

namespace tpsim::sim {
namespace {

namespace s4u = simgrid::s4u;
using model::Op;
using model::OpId;
using model::OpKind;

// One point-to-point step of a communication op, as every rank runs it.
struct StepPlan {
  int steps = 0;
  int send_offset = 0;
  int recv_offset = 0;
  double message_bytes = 0;
};

StepPlan plan_steps(const Op& op, int ranks) {
  StepPlan plan;
  if (ranks < 2) return plan;
  if (op.kind == OpKind::kExchange) {
    return StepPlan{1, op.send_offset, op.recv_offset, op.message_bytes};
  }
  // Ring collectives: each step sends one 1/n block to the next rank and receives one from the previous.
  const int ring_steps = op.collective == model::CollectiveKind::kAllReduce ? 2 * (ranks - 1) : ranks - 1;
  return StepPlan{ring_steps, 1, -1, op.tensor_bytes / ranks};
}

struct Instance {
  int pending = 0;
  int step = -1;
  int flows_left = 0;
  double start_s = -1;
  double end_s = -1;
};

// What an activity's completion means.
struct Completion {
  enum class Kind { kKernel, kFlowLatency, kFlow } kind = Kind::kKernel;
  OpId op = 0;
  int src = 0;  // kernel: its rank
  int dst = 0;
  s4u::ActivityPtr activity;
};

class Runner {
 public:
  Runner(const model::LayerGraph& graph, const CostModel& cost, const Platform& platform)
      : graph_(graph), cost_(cost), platform_(platform), ranks_(graph.tp()) {
    const size_t count = graph.size();
    instances_.resize(count * ranks_);
    plans_.resize(count);
    successors_.resize(count);
    for (OpId id = 0; id < count; ++id) {
      const Op& op = graph.op(id);
      plans_[id] = model::is_communication(op.kind) ? plan_steps(op, ranks_) : StepPlan{};
      for (const model::Dep& dep : op.deps) successors_[dep.op].push_back(model::Dep{id, dep.rank_offset});
      for (int r = 0; r < ranks_; ++r) instance(id, r).pending = static_cast<int>(op.deps.size());
    }
    comm_kernels_.assign(ranks_, 0);
  }

  Timeline run() {
    s4u::Activity::on_completion_cb(
        [this](s4u::Activity const& activity) { on_complete(*activity.get_data<Completion>()); });
    for (OpId id = 0; id < graph_.size(); ++id) {
      for (int r = 0; r < ranks_; ++r) {
        if (instance(id, r).pending == 0) start(id, r);
      }
    }
    s4u::Engine::get_instance()->run();
    released_.clear();
    return collect();
  }

 private:
  Instance& instance(OpId op, int rank) { return instances_[static_cast<size_t>(op) * ranks_ + rank]; }
  int wrap(int rank) const { return ((rank % ranks_) + ranks_) % ranks_; }

  Completion* track(Completion completion) {
    completions_.push_back(std::move(completion));
    return &completions_.back();
  }

  void start(OpId id, int rank) {
    const Op& op = graph_.op(id);
    instance(id, rank).start_s = s4u::Engine::get_clock();
    if (model::is_kernel(op.kind)) {
      start_kernel(id, rank, op);
      return;
    }
    if (op.transport == model::Transport::kSm) change_comm_kernels(rank, +1);
    enter_step(id, rank, 0);
  }

  void start_kernel(OpId id, int rank, const Op& op) {
    const double seconds = cost_.kernel_seconds(op);
    auto exec = s4u::Exec::init();
    exec->set_host(platform_.gpus[rank]);
    if (op.kind == OpKind::kMemory) {
      // Bandwidth-bound: runs at the speed of the slowest power state whatever comm kernels take SMs.
      exec->set_flops_amount(seconds * platform_.slowest_gpu_speed);
      exec->set_bound(platform_.slowest_gpu_speed);
    } else {
      exec->set_flops_amount(seconds * kWorkRate);
    }
    Completion* done = track({Completion::Kind::kKernel, id, rank, rank, exec});
    exec->set_data(done);
    exec->start();
  }

  void change_comm_kernels(int rank, int delta) {
    comm_kernels_[rank] += delta;
    platform_.gpus[rank]->set_pstate(std::min(comm_kernels_[rank], kMaxConcurrentComm));
  }

  void enter_step(OpId id, int rank, int step) {
    const StepPlan& plan = plans_[id];
    if (step >= plan.steps) {
      finish(id, rank);
      return;
    }
    Instance& self = instance(id, rank);
    self.step = step;
    self.flows_left = (plan.send_offset != 0 ? 1 : 0) + (plan.recv_offset != 0 ? 1 : 0);
    // A flow starts once both its ends have reached this step; whichever arrives second starts it.
    if (plan.send_offset != 0) {
      const int dst = wrap(rank + plan.send_offset);
      if (instance(id, dst).step == step) start_flow(id, rank, dst);
    }
    if (plan.recv_offset != 0) {
      const int src = wrap(rank + plan.recv_offset);
      if (instance(id, src).step == step) start_flow(id, src, rank);
    }
  }

  void start_flow(OpId id, int src, int dst) {
    const Op& op = graph_.op(id);
    const double latency = cost_.transport(op.transport).step_latency_s;
    if (latency > 0) {
      auto delay = s4u::Exec::init();
      delay->set_host(platform_.clock)->set_flops_amount(latency * kClockRate);
      Completion* done = track({Completion::Kind::kFlowLatency, id, src, dst, delay});
      delay->set_data(done);
      delay->start();
      return;
    }
    start_transfer(id, src, dst);
  }

  void start_transfer(OpId id, int src, int dst) {
    const Op& op = graph_.op(id);
    const double wire_bytes = plans_[id].message_bytes / cost_.transport(op.transport).link_efficiency;
    auto comm = s4u::Comm::sendto_init(platform_.gpus[src], platform_.gpus[dst]);
    comm->set_payload_size(static_cast<uint64_t>(std::llround(wire_bytes)));
    Completion* done = track({Completion::Kind::kFlow, id, src, dst, comm});
    comm->set_data(done);
    comm->start();
  }

  void on_complete(Completion& done) {
    // SimGrid still uses an activity while its completion callback runs, so it is released at the
    // next callback, when its handling is over.
    released_.clear();
    released_.push_back(std::move(done.activity));
    switch (done.kind) {
      case Completion::Kind::kKernel:
        finish(done.op, done.src);
        break;
      case Completion::Kind::kFlowLatency:
        start_transfer(done.op, done.src, done.dst);
        break;
      case Completion::Kind::kFlow:
        flow_done(done.op, done.src);
        flow_done(done.op, done.dst);
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
    if (model::is_communication(op.kind) && op.transport == model::Transport::kSm) change_comm_kernels(rank, -1);
    for (const model::Dep& succ : successors_[id]) {
      const int target = wrap(rank - succ.rank_offset);
      if (--instance(succ.op, target).pending == 0) start(succ.op, target);
    }
  }

  Timeline collect() {
    Timeline timeline;
    timeline.ranks = ranks_;
    timeline.spans.reserve(instances_.size());
    for (OpId id = 0; id < graph_.size(); ++id) {
      for (int r = 0; r < ranks_; ++r) {
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

  const model::LayerGraph& graph_;
  const CostModel& cost_;
  const Platform& platform_;
  int ranks_;
  std::vector<Instance> instances_;
  std::vector<StepPlan> plans_;
  std::vector<std::vector<model::Dep>> successors_;
  std::vector<int> comm_kernels_;
  std::deque<Completion> completions_;
  std::vector<s4u::ActivityPtr> released_;
};

}  // namespace

Timeline simulate_in_this_process(const model::LayerGraph& graph, const CostModel& cost) {
  xbt_log_control_set("root.thresh:critical");
  int argc = 1;
  char name[] = "tpsim";
  char* argv[] = {name, nullptr};
  s4u::Engine engine(&argc, argv);
  configure_engine(engine);
  const Platform platform = build_platform(Topology::kNvSwitch, graph.tp(), cost);
  Runner runner(graph, cost, platform);
  return runner.run();
}

}  // namespace tpsim::sim
