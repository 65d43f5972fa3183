// Timing with CUDA events (METHOD.md): warm-up launches first, then samples of back-to-back launches
// bracketed by events on the stream; each sample is its elapsed time over its launch count.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <vector>

#include "real/core/options.hpp"

namespace tpsim::real {

struct TimedRun {
  std::vector<double> seconds;  // per launch, one value per sample
  int launches = 1;             // per sample
};

// `launch(i)` enqueues launch number i (callers rotate input buffers with it) on `stream`. With
// timing.launches == 0 the count per sample is chosen from the warm-up so that a sample lasts at
// least timing.min_sample_s; ranks that must agree on the count pass it explicitly instead.
TimedRun time_launches(cudaStream_t stream, const TimingOptions& timing, const std::function<void(int)>& launch);
TimedRun time_launches(cudaStream_t stream, const TimingOptions& timing, int launches,
                       const std::function<void(int)>& launch);

// An event that orders work between streams (no timing).
cudaEvent_t ordering_event();

// An event pair on a stream, for the regions the helpers above do not fit (several streams).
class EventPair {
 public:
  EventPair();
  ~EventPair();
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  cudaEvent_t start() const { return start_; }
  cudaEvent_t stop() const { return stop_; }
  // Seconds from start to stop; waits for stop.
  double seconds() const;

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

// A timed region spread over several streams of one GPU: the helper streams start when the main
// stream reaches begin(), and the main stream waits for all of them before end() stops the clock.
class StreamRegion {
 public:
  StreamRegion(cudaStream_t main, std::vector<cudaStream_t> helpers);
  ~StreamRegion();
  StreamRegion(const StreamRegion&) = delete;
  StreamRegion& operator=(const StreamRegion&) = delete;
  void begin();
  void end();
  double seconds() const { return events_.seconds(); }  // waits for end()

 private:
  cudaStream_t main_;
  std::vector<cudaStream_t> helpers_;
  std::vector<cudaEvent_t> joins_;  // one per helper
  EventPair events_;
};

}  // namespace tpsim::real
