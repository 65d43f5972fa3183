// Times a GEMM and a partner (copy or collective) alone and started together on two streams of one
// GPU: one launch of each per sample, each sample queued whole behind a spinning kernel (after a
// barrier across ranks when the partner is a collective), so that "together" means exactly one of each
// and the host's enqueue is outside every timed region. The three runs alternate sample by sample.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <vector>

#include "real/core/options.hpp"
#include "real/cuda/queued_region.hpp"

namespace tpsim::real {

struct OverlapSamples {
  std::vector<double> gemm_alone;
  std::vector<double> partner_alone;
  std::vector<double> gemm_together;  // start of both to the GEMM's end
  std::vector<double> together;       // start of both to the later end
  int late = 0;                       // timed samples whose start the GPU reached before the host queued them
};

// `gemm(i)` enqueues on `gemm_stream`, `partner(i)` on `partner_stream` (i rotates buffers); `barrier`
// (several ranks) queues a barrier across them on the stream it is given. `partner_first` enqueues the
// partner before the GEMM in the together-run (a collective already holding SMs when the GEMM starts).
OverlapSamples time_overlap(cudaStream_t gemm_stream, cudaStream_t partner_stream, const TimingOptions& timing,
                            const std::function<void(int)>& gemm, const std::function<void(int)>& partner,
                            const Barrier& barrier = {}, bool partner_first = false);

}  // namespace tpsim::real
