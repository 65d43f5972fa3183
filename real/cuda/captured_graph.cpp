// Stream capture into a CUDA graph, and its replays.
#include "real/cuda/captured_graph.hpp"

#include "real/cuda/cuda_check.hpp"

namespace tpsim::real {

CapturedGraph::CapturedGraph(cudaStream_t stream, int calls, const std::function<void()>& enqueue) : calls_(calls) {
  TPSIM_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < calls; ++i) enqueue();
  TPSIM_CUDA(cudaStreamEndCapture(stream, &graph_));
  TPSIM_CUDA(cudaGraphInstantiate(&exec_, graph_, 0));
}

CapturedGraph::~CapturedGraph() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
}

void CapturedGraph::launch(cudaStream_t stream) const {
  TPSIM_CUDA(cudaGraphLaunch(exec_, stream));
}

}  // namespace tpsim::real
