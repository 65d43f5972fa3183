// A timed region over streams of one GPU that the host queues whole before the GPU starts it, in the
// order real/core/queue_ahead.hpp plans: [barrier across ranks], the spinning kernel, the start event
// (the other streams wait for it), the work, the joins, the stop event. A mark on the main stream times
// a part of the region (the GEMM's end in an overlap pair).
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <functional>
#include <vector>

#include "real/core/queue_ahead.hpp"
#include "real/cuda/event_timer.hpp"

namespace tpsim::real {

// Queues a barrier across ranks on the stream it is given; empty: none (one rank, or the caller's).
using Barrier = std::function<void(cudaStream_t)>;

class QueuedRegion {
 public:
  QueuedRegion(cudaStream_t main, std::vector<cudaStream_t> others);
  ~QueuedRegion();
  QueuedRegion(const QueuedRegion&) = delete;
  QueuedRegion& operator=(const QueuedRegion&) = delete;

  // Queues everything before the work: the barrier (if any), the spin, the start and the waits for it.
  void begin(const Barrier& barrier = {});
  // Queues the joins and the stop; returns true when the GPU had reached the start before this call
  // (the iteration was late: the host's enqueue may be in its time).
  bool end();
  // Records the mark on the main stream, or on `stream` (between begin and end).
  void mark() { mark(main_); }
  void mark(cudaStream_t stream);
  double seconds() const { return events_.seconds(); }  // waits for the stop
  double seconds_to_mark() const;                       // waits for the stop
  double spin_s() const { return queue_.spin_s(); }

 private:
  void run(QueueAction action, int stream, const Barrier& barrier);

  cudaStream_t main_;
  std::vector<cudaStream_t> others_;
  std::vector<cudaEvent_t> joins_;  // one per other stream
  cudaEvent_t mark_ = nullptr;
  EventPair events_;
  QueueAhead queue_;
  std::chrono::steady_clock::time_point host_start_;
};

}  // namespace tpsim::real
