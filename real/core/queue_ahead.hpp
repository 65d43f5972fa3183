// How tpsim-real times a composite iteration (overlap pair, async-TP pipeline, DTP chain) without the
// host's enqueue in the timed region (METHOD.md; as the launch bench's queued chains): the host queues
// the whole iteration behind a kernel that spins on the GPU's global timer, so the GPU starts it only
// once the host is done. On each GPU, in this order:
//   1. with several ranks, a barrier across them on the main stream (an NCCL all-reduce of one element)
//   2. the spinning kernel on the main stream
//   3. the start event on the main stream; every other stream taking part waits for it, so its work
//      is queued behind the spin as well
//   4. the iteration's work
//   5. each other stream's join event, waited for by the main stream; then the stop event
// The spin lasts twice the longest host enqueue seen so far plus a margin. An iteration whose start the
// GPU had already reached when the host finished queueing it is late (the GPU may have waited for the
// host): it is counted, and the margin doubles for the next ones.
#pragma once

#include <vector>

namespace tpsim::real {

enum class QueueAction { kBarrier, kSpin, kRecordStart, kWaitForStart, kWork, kJoin, kRecordStop };

// One action on one stream: 0 is the main stream, 1.. the other streams taking part.
struct QueuedAction {
  QueueAction action;
  int stream;
  bool operator==(const QueuedAction&) const = default;
};

std::vector<QueuedAction> queued_iteration_plan(int other_streams, bool barrier);

class QueueAhead {
 public:
  // Before the first iteration (a warm-up): room for a thousand launches at 5 us, above the 4 us per
  // launch the default profiles assume (launch.host_us).
  static constexpr double kFirstSpinS = 5e-3;
  // Assumed: slack for a host thread that stalls while it queues. Twice the longest enqueue covers the
  // enqueue varying by as much again; a late sample doubles the margin, so a slower host gets more.
  static constexpr double kMarginS = 1e-3;
  // A bound that only catches a runaway: the longest chain (4096 modules, about six calls each at 5 us)
  // queues in about 0.12 s.
  static constexpr double kMaxSpinS = 1.0;

  double spin_s() const { return spin_s_; }
  // After an iteration: how long the host took to queue it, and whether the GPU had reached its start.
  void record(double enqueue_s, bool start_reached_early);
  int late() const { return late_; }

 private:
  double spin_s_ = kFirstSpinS;
  double margin_s_ = kMarginS;
  double longest_enqueue_s_ = 0;
  int late_ = 0;
};

}  // namespace tpsim::real
