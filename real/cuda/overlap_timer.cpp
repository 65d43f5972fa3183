// The alone and together runs as queued regions: in the together-run the stream that goes second waits
// for the start on the other's, and a mark after the GEMM times the GEMM's part.
#include "real/cuda/overlap_timer.hpp"

namespace tpsim::real {

OverlapSamples time_overlap(cudaStream_t gemm_stream, cudaStream_t partner_stream, const TimingOptions& timing,
                            const std::function<void(int)>& gemm, const std::function<void(int)>& partner,
                            const Barrier& barrier, bool partner_first) {
  OverlapSamples out;
  QueuedRegion gemm_alone(gemm_stream, {}), partner_alone(partner_stream, {});
  // The stream that follows the spin directly starts first (the other waits for an event): the partner's
  // when it goes first, so that its blocks hold their SMs before the GEMM's are placed.
  QueuedRegion together(partner_first ? partner_stream : gemm_stream, {partner_first ? gemm_stream : partner_stream});
  // Each run waits for the previous one's end (seconds() does): the alone runs must not overlap.
  auto run = [&](QueuedRegion& region, const std::function<void()>& work, bool* late) {
    region.begin(barrier);
    work();
    *late = region.end() || *late;
    return region.seconds();
  };
  for (int s = -timing.warmup, i = 0; s < timing.samples; ++s, ++i) {
    bool late = false;
    const double gemm_s = run(
        gemm_alone, [&] { gemm(i); }, &late);
    const double partner_s = run(
        partner_alone, [&] { partner(i); }, &late);
    const double together_s = run(
        together,
        [&] {
          if (partner_first) partner(i);
          gemm(i);
          together.mark(gemm_stream);
          if (!partner_first) partner(i);
        },
        &late);
    if (s < 0) continue;  // warm-up
    out.gemm_alone.push_back(gemm_s);
    out.partner_alone.push_back(partner_s);
    out.gemm_together.push_back(together.seconds_to_mark());
    out.together.push_back(together_s);
    out.late += late ? 1 : 0;
  }
  return out;
}

}  // namespace tpsim::real
