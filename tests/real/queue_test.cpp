// Host side of the queued timing of composites: the order of a queued iteration and the spin's length.
#include <catch2/catch.hpp>

#include "real/core/queue_ahead.hpp"

using namespace tpsim::real;

TEST_CASE("a queued iteration: barrier, spin, start, every other stream behind the start, work, joins, stop",
          "[real][queue]") {
  using A = QueueAction;
  const std::vector<QueuedAction> expected = {{A::kBarrier, 0},      {A::kSpin, 0},         {A::kRecordStart, 0},
                                              {A::kWaitForStart, 1}, {A::kWaitForStart, 2}, {A::kWork, 0},
                                              {A::kJoin, 1},         {A::kJoin, 2},         {A::kRecordStop, 0}};
  CHECK(queued_iteration_plan(2, true) == expected);
  // One GPU, one stream: no barrier, nothing to wait or join.
  const std::vector<QueuedAction> alone = {{A::kSpin, 0}, {A::kRecordStart, 0}, {A::kWork, 0}, {A::kRecordStop, 0}};
  CHECK(queued_iteration_plan(0, false) == alone);
}

TEST_CASE("the spin lasts twice the longest enqueue so far plus a margin that doubles after a late iteration",
          "[real][queue]") {
  QueueAhead q;
  CHECK(q.spin_s() == QueueAhead::kFirstSpinS);
  q.record(400e-6, false);
  CHECK(q.spin_s() == Approx(2 * 400e-6 + QueueAhead::kMarginS));
  q.record(100e-6, false);  // a quicker enqueue does not shorten it
  CHECK(q.spin_s() == Approx(2 * 400e-6 + QueueAhead::kMarginS));
  q.record(300e-6, true);
  CHECK(q.late() == 1);
  CHECK(q.spin_s() == Approx(2 * 400e-6 + 2 * QueueAhead::kMarginS));
  q.record(10.0, false);  // a host stalled for seconds: capped
  CHECK(q.spin_s() == QueueAhead::kMaxSpinS);
}
