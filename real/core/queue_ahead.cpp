// The queued iteration's actions and the spin length.
#include "real/core/queue_ahead.hpp"

#include <algorithm>

namespace tpsim::real {

std::vector<QueuedAction> queued_iteration_plan(int other_streams, bool barrier) {
  std::vector<QueuedAction> plan;
  if (barrier) plan.push_back({QueueAction::kBarrier, 0});
  plan.push_back({QueueAction::kSpin, 0});
  plan.push_back({QueueAction::kRecordStart, 0});
  for (int s = 1; s <= other_streams; ++s) plan.push_back({QueueAction::kWaitForStart, s});
  plan.push_back({QueueAction::kWork, 0});
  for (int s = 1; s <= other_streams; ++s) plan.push_back({QueueAction::kJoin, s});
  plan.push_back({QueueAction::kRecordStop, 0});
  return plan;
}

void QueueAhead::record(double enqueue_s, bool start_reached_early) {
  longest_enqueue_s_ = std::max(longest_enqueue_s_, enqueue_s);
  if (start_reached_early) {
    ++late_;
    margin_s_ *= 2;
  }
  spin_s_ = std::min(kMaxSpinS, 2 * longest_enqueue_s_ + margin_s_);
}

}  // namespace tpsim::real
