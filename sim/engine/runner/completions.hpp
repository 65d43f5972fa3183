// The engine's side of SimGrid's activities and timers: each started with what its end means, its end handed back
// once (a flow in parts at its last part), the records reused and each activity released once SimGrid is done with it.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <simgrid/s4u.hpp>

#include "model/graph/op.hpp"

namespace tpsim::sim {

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
  model::OpId op = 0;
  int src = 0;  // kernel: its rank
  int dst = 0;
  simgrid::s4u::ActivityPtr activity;
  // A flow carried as several parallel parts (one per rail): the parts still in flight, shared.
  std::shared_ptr<int> parts_left;
};

class Completions {
 public:
  // Called at the end of each activity or wait of op `id` (ranks src -> dst), as `kind`.
  using Over = std::function<void(Completion::Kind kind, model::OpId id, int src, int dst)>;

  explicit Completions(Over over) : over_(std::move(over)) {}

  // Hands each activity's end to `over` from now on (SimGrid's completion callback).
  void listen();

  // Starts `activity`; its completion is handed back as `kind` for op `id` (ranks src -> dst), once all
  // `parts_left` (when given) are over.
  void launch(const simgrid::s4u::ActivityPtr& activity, Completion::Kind kind, model::OpId id, int src, int dst,
              std::shared_ptr<int> parts_left = nullptr);

  // A pure wait of `seconds`: a SimGrid timer, no activity (nothing shares it, so nothing is solved for it). At its
  // date its end is handled before the activities that end at the same date.
  void wait(double seconds, Completion::Kind kind, model::OpId id, int src, int dst);

  // The run is over: the last activity ended is released.
  void release() { released_.clear(); }

 private:
  // A completion record, reusing one whose activity is over: as many are held as activities in flight.
  Completion* track(Completion completion);
  void on_complete(Completion& done);

  Over over_;
  std::deque<Completion> completions_;
  std::vector<Completion*> free_completions_;  // records of completed activities, for reuse
  std::vector<simgrid::s4u::ActivityPtr> released_;
};

}  // namespace tpsim::sim
