// What a profiler trace says beyond single-op points: its GPU time by kernel class (unclassified kernels
// listed by name), attention and memory-bound rates from the launching ops' shapes, GEMMs that overlapped NCCL
// kernels (the slowdown data of SM sharing), and the host's launch time. Reported by calibrate; the values
// no fitter consumes yet are said to be so.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "calibrate/trace/kernel_class.hpp"
#include "calibrate/trace/kineto_trace.hpp"
#include "sim/cost/gpu_spec.hpp"

namespace tpsim::calibrate {

struct ClassTime {
  size_t kernels = 0;
  double time_s = 0;
};

struct TraceAnalysis {
  std::string path;
  std::map<KernelClass, ClassTime> by_class;
  std::map<std::string, ClassTime> unclassified;  // kernel name (up to its argument list) -> count and time
  // Attention kernels with their op's q shape [batch, heads, seq, head_dim]: achieved fraction of the bf16
  // peak, forward (FLOPs 4 b h s^2 d, halved when causal) and backward (2.5x the forward's FLOPs).
  std::vector<double> attention_forward_eff, attention_backward_eff;
  size_t attention_without_shapes = 0;
  // Memory-bound kernels whose op's inputs give bytes (inputs read, the largest written): fraction of HBM.
  std::vector<double> memory_hbm_eff;
  size_t memory_without_shapes = 0;
  // GEMM kernels overlapping an NCCL kernel on the same device, and their time over the median of the same
  // kernel name's non-overlapped runs.
  size_t gemm_overlapped = 0;
  std::vector<double> overlap_slowdown;
  // Host: launch calls' durations; GPU idle between consecutive kernels of the busiest stream.
  std::vector<double> launch_call_s;
  double busiest_stream_idle_s = 0, busiest_stream_busy_s = 0;
};

TraceAnalysis analyse_trace(const KinetoTrace& trace, const sim::GpuSpec& gpu);

// The analysis as calibrate prints it (and `tpsim calibrate report` shows): one section per trace.
std::string analysis_text(const TraceAnalysis& a, const std::vector<std::string>& not_fitted);

}  // namespace tpsim::calibrate
