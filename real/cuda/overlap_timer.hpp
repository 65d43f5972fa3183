// Times a GEMM and a partner (copy or collective) alone and started together on two streams of one
// GPU: one launch per sample, so that "together" means exactly one of each.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <vector>

#include "real/core/options.hpp"

namespace tpsim::real {

struct OverlapSamples {
  std::vector<double> gemm_alone;
  std::vector<double> partner_alone;
  std::vector<double> gemm_together;  // start of both to the GEMM's end
  std::vector<double> together;       // start of both to the later end
};

// `gemm(i)` enqueues on `gemm_stream`, `partner(i)` on `partner_stream` (i rotates buffers).
OverlapSamples time_overlap(cudaStream_t gemm_stream, cudaStream_t partner_stream, const TimingOptions& timing,
                            const std::function<void(int)>& gemm, const std::function<void(int)>& partner);

}  // namespace tpsim::real
