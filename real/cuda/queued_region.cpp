// Runs queue_ahead's plan: the actions before the work in begin(), the rest in end().
#include "real/cuda/queued_region.hpp"

#include "real/cuda/cuda_check.hpp"
#include "real/cuda/kernels.hpp"

namespace tpsim::real {

QueuedRegion::QueuedRegion(cudaStream_t main, std::vector<cudaStream_t> others)
    : main_(main), others_(std::move(others)) {
  for (size_t i = 0; i < others_.size(); ++i) joins_.push_back(ordering_event());
  TPSIM_CUDA(cudaEventCreate(&mark_));
}

QueuedRegion::~QueuedRegion() {
  for (cudaEvent_t e : joins_) cudaEventDestroy(e);
  cudaEventDestroy(mark_);
}

void QueuedRegion::run(QueueAction action, int stream, const Barrier& barrier) {
  cudaStream_t other = stream > 0 ? others_[static_cast<size_t>(stream - 1)] : main_;
  switch (action) {
    case QueueAction::kBarrier:
      if (barrier) barrier(main_);
      break;
    case QueueAction::kSpin:
      launch_spin_kernel(main_, queue_.spin_s());
      break;
    case QueueAction::kRecordStart:
      TPSIM_CUDA(cudaEventRecord(events_.start(), main_));
      host_start_ = std::chrono::steady_clock::now();
      break;
    case QueueAction::kWaitForStart:
      TPSIM_CUDA(cudaStreamWaitEvent(other, events_.start(), 0));
      break;
    case QueueAction::kJoin:
      TPSIM_CUDA(cudaEventRecord(joins_[static_cast<size_t>(stream - 1)], other));
      TPSIM_CUDA(cudaStreamWaitEvent(main_, joins_[static_cast<size_t>(stream - 1)], 0));
      break;
    case QueueAction::kRecordStop:
      TPSIM_CUDA(cudaEventRecord(events_.stop(), main_));
      break;
    case QueueAction::kWork:
      break;  // the caller's, between begin() and end()
  }
}

void QueuedRegion::begin(const Barrier& barrier) {
  for (const QueuedAction& a : queued_iteration_plan(static_cast<int>(others_.size()), static_cast<bool>(barrier))) {
    if (a.action == QueueAction::kWork) return;
    run(a.action, a.stream, barrier);
  }
}

bool QueuedRegion::end() {
  bool after_work = false;
  for (const QueuedAction& a : queued_iteration_plan(static_cast<int>(others_.size()), false)) {
    if (after_work) run(a.action, a.stream, {});
    after_work = after_work || a.action == QueueAction::kWork;
  }
  const double enqueue_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start_).count();
  const cudaError_t started = cudaEventQuery(events_.start());
  if (started == cudaErrorNotReady) {
    cudaGetLastError();  // not an error: the GPU is still spinning, as it should be
  } else {
    TPSIM_CUDA(started);  // cudaSuccess: the GPU is past the start
  }
  const bool late = started == cudaSuccess;
  queue_.record(enqueue_s, late);
  return late;
}

void QueuedRegion::mark(cudaStream_t stream) {
  TPSIM_CUDA(cudaEventRecord(mark_, stream));
}

double QueuedRegion::seconds_to_mark() const {
  TPSIM_CUDA(cudaEventSynchronize(events_.stop()));
  float ms = 0;
  TPSIM_CUDA(cudaEventElapsedTime(&ms, events_.start(), mark_));
  return static_cast<double>(ms) * 1e-3;
}

}  // namespace tpsim::real
