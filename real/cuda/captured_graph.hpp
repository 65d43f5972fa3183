// A CUDA graph of `calls` launches captured on one stream (as nccl-tests -G captures its iterations): replaying it
// runs them without the host's launch path, so their time is the device's alone.
#pragma once

#include <cuda_runtime.h>

#include <functional>

namespace tpsim::real {

class CapturedGraph {
 public:
  // Captures `calls` calls of `enqueue` on `stream` (thread-local capture: each rank's thread captures its own,
  // as NCCL requires of one process driving several GPUs) and instantiates the graph.
  CapturedGraph(cudaStream_t stream, int calls, const std::function<void()>& enqueue);
  ~CapturedGraph();
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;

  // Enqueues one replay of every captured call on `stream`.
  void launch(cudaStream_t stream) const;
  int calls() const { return calls_; }

 private:
  int calls_ = 0;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace tpsim::real
