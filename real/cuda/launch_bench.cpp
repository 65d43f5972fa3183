// tpsim-real launch: the host time of launching kernels one by one, and of a wait on another stream's
// event, from chains of empty kernels: on one stream, and alternating between two streams where each
// kernel waits on the previous one's event (the pattern of a collective between two GEMMs). The same
// chains queued whole behind a spinning kernel before the GPU reaches them give the GPU's own time
// per kernel and per wait (patterns *_queued).
#include <algorithm>

#include "real/core/measurement_log.hpp"
#include "real/core/points.hpp"
#include "real/core/stats.hpp"
#include "real/core/text_table.hpp"
#include "real/cuda/benches.hpp"
#include "real/cuda/cuda_check.hpp"
#include "real/cuda/device_info.hpp"
#include "real/cuda/event_timer.hpp"
#include "real/cuda/gpu_session.hpp"
#include "real/cuda/kernels.hpp"

namespace tpsim::real {
namespace {

// Owns the second stream and the two events that hand the chain from one stream to the other.
class TwoStreams {
 public:
  explicit TwoStreams(cudaStream_t main) : main_(main) {
    TPSIM_CUDA(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking));
    for (cudaEvent_t& e : handoff_) TPSIM_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  ~TwoStreams() {
    for (cudaEvent_t e : handoff_) cudaEventDestroy(e);
    cudaStreamDestroy(side_);
  }
  TwoStreams(const TwoStreams&) = delete;
  TwoStreams& operator=(const TwoStreams&) = delete;

  cudaStream_t side() const { return side_; }

  // `kernels` empty kernels; cross: kernel i runs on stream i % 2 and first waits for kernel i - 1.
  void chain(int kernels, bool cross) {
    for (int i = 0; i < kernels; ++i) {
      cudaStream_t stream = cross && i % 2 == 1 ? side_ : main_;
      if (cross && i > 0) {
        cudaStream_t previous = stream == main_ ? side_ : main_;
        cudaEvent_t done = handoff_[static_cast<size_t>(i % 2)];
        TPSIM_CUDA(cudaEventRecord(done, previous));
        TPSIM_CUDA(cudaStreamWaitEvent(stream, done, 0));
      }
      launch_empty_kernel(stream);
    }
  }

 private:
  cudaStream_t main_;
  cudaStream_t side_ = nullptr;
  cudaEvent_t handoff_[2] = {nullptr, nullptr};
};

// Queued chains stay short enough that the host never waits for room in the launch queues (their depth
// is undocumented; about a thousand pending commands per stream is assumed, and a cross-stream chain
// queues three per kernel), and start behind a spin long enough for the host to queue them at up to
// 20 us per kernel (assumed: five times the 4 us launch the profiles assume) plus 5 ms of margin.
constexpr int kMaxQueuedKernels = 200;
double queue_ahead_seconds(int kernels) {
  return 5e-3 + kernels * 20e-6;
}

}  // namespace

int run_launch_bench(const RealOptions& o, const std::vector<std::string>& arguments) {
  GpuSession gpu(o, arguments, chosen_device(o));
  TwoStreams streams(gpu.stream());
  MeasurementLog log(o.json_out);
  TextTable table({"pattern", "kernels", "median us", "us per kernel", "noise %"});
  for (const bool queued : {false, true}) {
    for (const bool cross : {false, true}) {
      const int kernels = queued ? std::min(o.kernels, kMaxQueuedKernels) : o.kernels;
      StreamRegion region(gpu.stream(), {streams.side()});
      const auto one_chain = [&]() {
        if (queued) launch_spin_kernel(gpu.stream(), queue_ahead_seconds(kernels));
        region.begin();  // recorded behind the spin: the region starts when the GPU reaches the chain
        streams.chain(kernels, cross);
        region.end();
      };
      for (int w = 0; w < o.timing.warmup; ++w) one_chain();
      TPSIM_CUDA(cudaDeviceSynchronize());
      GpuStateSampler gpu_state = sample_gpu_state({gpu.device()});
      std::vector<double> seconds;
      for (int s = 0; s < o.timing.samples; ++s) {
        one_chain();
        seconds.push_back(region.seconds());
      }
      PointContext c{gpu.gpu(), gpu.provenance_json(), summarize(seconds), 1, 0,
                     true,      gpu_state.finish(),    std::nullopt};
      const std::string pattern = std::string(cross ? "cross_stream" : "same_stream") + (queued ? "_queued" : "");
      log.add(launch_point(c, pattern, kernels));
      table.add_row({pattern, std::to_string(kernels), fixed(c.timing.median * 1e6, 1),
                     fixed(c.timing.median / kernels * 1e6, 2), fixed(100 * c.timing.spread(), 1)});
    }
  }
  log.finish();
  print_report(o, "Launch chains on " + gpu.facts().name + "\n" + table.str());
  return 0;
}

}  // namespace tpsim::real
