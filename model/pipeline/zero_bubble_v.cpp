// ZB-V's step lists: the V placement's passes ordered by a greedy list schedule under 1F1B's activation memory.
#include "model/pipeline/zero_bubble_v.hpp"

#include <deque>
#include <set>
#include <stdexcept>
#include <utility>

namespace tpsim::model {
namespace {

// Runs the V in time with the given costs and orders each stage's passes as it goes: whenever a stage is free it
// starts, first, the input-gradient pass of the oldest micro-batch it can (these are on the critical path: the
// previous stage waits for them); else a forward, the second leg's first (it brings a micro-batch nearer its
// loss), while it holds fewer than 2p chunks' activations (1F1B's peak on its first stage, p micro-batches of a
// whole stage), never all of them micro-batches still to come back; else the oldest deferred weight gradient.
// Deferred weight gradients so fill the time a stage would wait. (The zero-bubble authors' automatic scheduler
// likewise orders passes from profiled times; their handcrafted ZB-V assumes F = B = W.)
class Generator {
 public:
  Generator(int stages, int microbatches, const PipelineCosts& costs)
      : p_(stages),
        m_(microbatches),
        costs_(costs),
        forward_end_(2 * stages, std::vector<double>(microbatches, kNotRun)),
        backward_end_(2 * stages, std::vector<double>(microbatches, kNotRun)),
        stages_(stages) {}

  std::vector<std::vector<PipelineStep>> run() {
    int left = 3 * 2 * p_ * m_;
    double now = 0;
    while (left > 0) {
      bool started = false;
      for (int s = 0; s < p_; ++s) {
        if (stages_[s].free_at <= now && start_next(s, now)) {
          started = true;
          --left;
        }
      }
      if (started) continue;
      // Nothing can start now: on to the next time a pass ends or its input arrives.
      const auto next = events_.upper_bound(now);
      if (next == events_.end()) throw std::logic_error("zb-v: the greedy schedule cannot place every pass");
      now = *next;
    }
    std::vector<std::vector<PipelineStep>> out;
    for (Stage& stage : stages_) out.push_back(std::move(stage.steps));
    return out;
  }

 private:
  static constexpr double kNotRun = -1;

  struct Stage {
    double free_at = 0;
    int forwards[2] = {0, 0};                 // per leg: micro-batches whose forward it has run
    int backwards[2] = {0, 0};                // and whose input gradient
    int held = 0;                             // chunks' activations held: forwards whose weight gradient has not run
    std::deque<std::pair<int, int>> weights;  // (micro-batch, leg) whose weight gradient is deferred
    std::vector<PipelineStep> steps;
  };

  // Leg 0 of stage s is model chunk s, leg 1 chunk 2p - 1 - s.
  int chunk(int s, int leg) const { return leg == 0 ? s : 2 * p_ - 1 - s; }
  double hop(int boundary) const { return costs_.hop_s.empty() ? 0.0 : costs_.hop_s[boundary]; }
  // When a pass's input is there: its end plus the hop it crosses, or kNotRun.
  static double arrives(double end, double delay) { return end == kNotRun ? kNotRun : end + delay; }
  static bool by(double time, double now) { return time != kNotRun && time <= now; }

  double forward_input(int mb, int c) const { return c == 0 ? 0.0 : arrives(forward_end_[c - 1][mb], hop(c - 1)); }
  double backward_input(int mb, int c) const {
    return c == 2 * p_ - 1 ? forward_end_[c][mb] : arrives(backward_end_[c + 1][mb], hop(c));
  }

  // Starts a pass of `seconds` on stage s at `now`; its end (and where it feeds a neighbour, its arrival there)
  // become events.
  void record(int s, double now, double seconds, PipelinePass pass, int mb, int leg) {
    stages_[s].steps.push_back(PipelineStep{pass, mb, leg});
    const double end = now + seconds;
    stages_[s].free_at = end;
    events_.insert(end);
    const int c = chunk(s, leg);
    if (pass == PipelinePass::kForward && c + 1 < 2 * p_) events_.insert(end + hop(c));
    if (pass == PipelinePass::kBackward && c > 0) events_.insert(end + hop(c - 1));
  }

  bool start_next(int s, double now) {
    Stage& st = stages_[s];
    // The oldest ready input gradient; between legs at the same micro-batch, leg 1's (earlier on its way back).
    int best = -1;
    for (const int leg : {1, 0}) {
      const int mb = st.backwards[leg];
      if (mb < m_ && by(backward_input(mb, chunk(s, leg)), now) && (best < 0 || mb < st.backwards[best])) best = leg;
    }
    if (best >= 0) {
      const int mb = st.backwards[best]++, c = chunk(s, best);
      const ChunkCosts& k = costs_.chunk[c];
      backward_end_[c][mb] = now + (k.backward_s - k.weight_gradient_s);
      st.weights.emplace_back(mb, best);
      record(s, now, k.backward_s - k.weight_gradient_s, PipelinePass::kBackward, mb, best);
      return true;
    }
    for (const int leg : {1, 0}) {
      if (st.held >= 2 * p_) continue;
      // A first-leg forward never fills the memory with micro-batches that have yet to come back through the
      // second leg: one of them would wait for memory only their own backwards could free.
      if (leg == 0 && st.forwards[0] + 1 - st.forwards[1] >= 2 * p_) continue;
      const int mb = st.forwards[leg], c = chunk(s, leg);
      if (mb >= m_ || !by(forward_input(mb, c), now)) continue;
      ++st.forwards[leg];
      forward_end_[c][mb] = now + costs_.chunk[c].forward_s;
      ++st.held;
      record(s, now, costs_.chunk[c].forward_s, PipelinePass::kForward, mb, leg);
      return true;
    }
    if (!st.weights.empty()) {
      const auto [mb, leg] = st.weights.front();
      if (!by(backward_end_[chunk(s, leg)][mb], now)) return false;
      st.weights.pop_front();
      --st.held;
      record(s, now, costs_.chunk[chunk(s, leg)].weight_gradient_s, PipelinePass::kWeightGradient, mb, leg);
      return true;
    }
    return false;
  }

  int p_, m_;
  const PipelineCosts& costs_;
  std::vector<std::vector<double>> forward_end_, backward_end_;  // [model chunk][micro-batch]: time, or kNotRun
  std::vector<Stage> stages_;
  std::set<double> events_;
};

}  // namespace

std::vector<std::vector<PipelineStep>> zero_bubble_v_steps(int stages, int microbatches, const PipelineCosts& costs) {
  if (costs.chunk.size() != static_cast<size_t>(2 * stages)) {
    throw std::logic_error("zb-v: " + std::to_string(costs.chunk.size()) + " chunk costs for " +
                           std::to_string(2 * stages) + " model chunks");
  }
  return Generator(stages, microbatches, costs).run();
}

}  // namespace tpsim::model
