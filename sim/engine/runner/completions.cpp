// The engine's side of SimGrid's activities and timers: what each one's end means, handed back once.
#include "sim/engine/runner/completions.hpp"

#include <utility>

#include <simgrid/kernel/Timer.hpp>

namespace tpsim::sim {

namespace s4u = simgrid::s4u;

void Completions::listen() {
  s4u::Activity::on_completion_cb(
      [this](s4u::Activity const& activity) { on_complete(*activity.get_data<Completion>()); });
}

void Completions::launch(const s4u::ActivityPtr& activity, Completion::Kind kind, model::OpId id, int src, int dst,
                         std::shared_ptr<int> parts_left) {
  Completion* done = track({kind, id, src, dst, activity, std::move(parts_left)});
  activity->set_data(done);
  activity->start();
}

void Completions::wait(double seconds, Completion::Kind kind, model::OpId id, int src, int dst) {
  simgrid::kernel::timer::Timer::set(s4u::Engine::get_clock() + seconds,
                                     [this, kind, id, src, dst] { over_(kind, id, src, dst); });
}

Completion* Completions::track(Completion completion) {
  if (!free_completions_.empty()) {
    Completion* reused = free_completions_.back();
    free_completions_.pop_back();
    *reused = std::move(completion);
    return reused;
  }
  completions_.push_back(std::move(completion));
  return &completions_.back();
}

void Completions::on_complete(Completion& done) {
  // SimGrid still uses an activity while its completion callback runs, so it is released at the
  // next callback, when its handling is over.
  released_.clear();
  released_.push_back(std::move(done.activity));
  // A flow carried in parts is over with its last part.
  if (!done.parts_left || --*done.parts_left == 0) over_(done.kind, done.op, done.src, done.dst);
  done.parts_left.reset();
  free_completions_.push_back(&done);
}

}  // namespace tpsim::sim
