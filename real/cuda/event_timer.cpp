// Event-based sampling.
#include "real/cuda/event_timer.hpp"

#include <algorithm>
#include <cmath>

#include "real/cuda/cuda_check.hpp"

namespace tpsim::real {

cudaEvent_t ordering_event() {
  cudaEvent_t e = nullptr;
  TPSIM_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

EventPair::EventPair() {
  TPSIM_CUDA(cudaEventCreate(&start_));
  TPSIM_CUDA(cudaEventCreate(&stop_));
}

EventPair::~EventPair() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}

double EventPair::seconds() const {
  TPSIM_CUDA(cudaEventSynchronize(stop_));
  float ms = 0;
  TPSIM_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
  return static_cast<double>(ms) * 1e-3;
}

StreamRegion::StreamRegion(cudaStream_t main, std::vector<cudaStream_t> helpers)
    : main_(main), helpers_(std::move(helpers)) {
  for (size_t i = 0; i < helpers_.size(); ++i) joins_.push_back(ordering_event());
}

StreamRegion::~StreamRegion() {
  for (cudaEvent_t e : joins_) cudaEventDestroy(e);
}

void StreamRegion::begin() {
  TPSIM_CUDA(cudaEventRecord(events_.start(), main_));
  for (cudaStream_t s : helpers_) TPSIM_CUDA(cudaStreamWaitEvent(s, events_.start(), 0));
}

void StreamRegion::end() {
  for (size_t i = 0; i < helpers_.size(); ++i) {
    TPSIM_CUDA(cudaEventRecord(joins_[i], helpers_[i]));
    TPSIM_CUDA(cudaStreamWaitEvent(main_, joins_[i], 0));
  }
  TPSIM_CUDA(cudaEventRecord(events_.stop(), main_));
}

TimedRun time_launches(cudaStream_t stream, const TimingOptions& timing, int launches,
                       const std::function<void(int)>& launch) {
  int counter = 0;
  for (int i = 0; i < timing.warmup; ++i) launch(counter++);
  TPSIM_CUDA(cudaStreamSynchronize(stream));
  TimedRun run;
  run.launches = std::max(1, launches);
  const EventPair events;
  for (int s = 0; s < timing.samples; ++s) {
    TPSIM_CUDA(cudaEventRecord(events.start(), stream));
    for (int i = 0; i < run.launches; ++i) launch(counter++);
    TPSIM_CUDA(cudaEventRecord(events.stop(), stream));
    run.seconds.push_back(events.seconds() / run.launches);
  }
  return run;
}

TimedRun time_launches(cudaStream_t stream, const TimingOptions& timing, const std::function<void(int)>& launch) {
  if (timing.launches > 0) return time_launches(stream, timing, timing.launches, launch);
  // Estimate one launch from a batch (its first launch pays any remaining start-up cost).
  constexpr int kProbe = 3;
  const EventPair probe;
  TPSIM_CUDA(cudaEventRecord(probe.start(), stream));
  for (int i = 0; i < kProbe; ++i) launch(i);
  TPSIM_CUDA(cudaEventRecord(probe.stop(), stream));
  const double each = probe.seconds() / kProbe;
  constexpr int kMaxLaunches = 10000;
  const int launches = static_cast<int>(
      std::clamp(std::ceil(timing.min_sample_s / std::max(each, 1e-9)), 1.0, static_cast<double>(kMaxLaunches)));
  return time_launches(stream, timing, launches, launch);
}

}  // namespace tpsim::real
