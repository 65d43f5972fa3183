// The together-run: the partner's stream waits on an event recorded at the start on the GEMM's stream.
#include "real/cuda/overlap_timer.hpp"

#include <algorithm>

#include "real/cuda/cuda_check.hpp"
#include "real/cuda/event_timer.hpp"

namespace tpsim::real {

OverlapSamples time_overlap(cudaStream_t gemm_stream, cudaStream_t partner_stream, const TimingOptions& timing,
                            const std::function<void(int)>& gemm, const std::function<void(int)>& partner) {
  OverlapSamples out;
  out.gemm_alone = time_launches(gemm_stream, timing, 1, gemm).seconds;
  out.partner_alone = time_launches(partner_stream, timing, 1, partner).seconds;
  const EventPair gemm_events, partner_events;
  for (int s = -timing.warmup; s < timing.samples; ++s) {
    TPSIM_CUDA(cudaEventRecord(gemm_events.start(), gemm_stream));
    TPSIM_CUDA(cudaStreamWaitEvent(partner_stream, gemm_events.start(), 0));
    gemm(s + timing.warmup);
    partner(s + timing.warmup);
    TPSIM_CUDA(cudaEventRecord(gemm_events.stop(), gemm_stream));
    TPSIM_CUDA(cudaEventRecord(partner_events.stop(), partner_stream));
    TPSIM_CUDA(cudaEventSynchronize(partner_events.stop()));
    const double gemm_s = gemm_events.seconds();
    float partner_ms = 0;
    TPSIM_CUDA(cudaEventElapsedTime(&partner_ms, gemm_events.start(), partner_events.stop()));
    if (s < 0) continue;  // warm-up
    out.gemm_together.push_back(gemm_s);
    out.together.push_back(std::max(gemm_s, static_cast<double>(partner_ms) * 1e-3));
  }
  return out;
}

}  // namespace tpsim::real
