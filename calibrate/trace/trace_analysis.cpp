// Class totals, attention and memory-bound rates, GEMM-NCCL overlaps and launch times of a trace.
#include "calibrate/trace/trace_analysis.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "base/input_error.hpp"
#include "calibrate/trace/trace_points.hpp"

namespace tpsim::calibrate {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

int64_t elements(const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) {
    if (__builtin_mul_overflow(p, d, &p)) return 0;  // no tensor this large: no bytes read from it
  }
  return p;
}

// Whether an attention op ran causal: its Concrete Inputs' is_causal where the op's schema places it
// (_scaled_dot_product_flash_attention: 5th input; cudnn and efficient: 7th; their forward ops likewise), else
// assumed causal (decoder training and prefill).
bool causal(const TraceOp& op) {
  const size_t at = op.name.find("flash") != std::string::npos ? 4 : 6;
  if (at < op.concrete.size() && (op.concrete[at] == "False" || op.concrete[at] == "True")) {
    return op.concrete[at] == "True";
  }
  return true;
}

void attention_rate(const KinetoTrace& t, const TraceKernel& k, const sim::GpuSpec& gpu, TraceAnalysis& a) {
  int op = k.op;
  while (op >= 0 && !(t.ops[op].name.find("attention") != std::string::npos && !t.ops[op].dims.empty() &&
                      t.ops[op].dims[0].size() == 4)) {
    op = t.ops[op].parent;
  }
  if (op < 0) {
    ++a.attention_without_shapes;
    return;
  }
  const std::vector<int64_t>& q = t.ops[op].dims[0];  // [batch, heads, seq, head_dim]
  const double forward_flop = 4.0 * static_cast<double>(q[0]) * q[1] * q[2] * q[2] * q[3] / (causal(t.ops[op]) ? 2 : 1);
  const bool backward = t.ops[op].name.find("backward") != std::string::npos ||
                        k.name.find("bwd") != std::string::npos || k.name.find("bprop") != std::string::npos;
  if (k.dur_s <= 0 || gpu.peak_bf16_flops <= 0) return;
  const double eff = (backward ? 2.5 : 1.0) * forward_flop / k.dur_s / gpu.peak_bf16_flops;
  (backward ? a.attention_backward_eff : a.attention_forward_eff).push_back(eff);
}

void memory_rate(const KinetoTrace& t, const TraceKernel& k, const sim::GpuSpec& gpu, TraceAnalysis& a) {
  if (k.op < 0 || t.ops[k.op].dims.empty()) {
    ++a.memory_without_shapes;
    return;
  }
  const TraceOp& op = t.ops[k.op];
  double bytes = 0, largest = 0;
  for (size_t i = 0; i < op.dims.size(); ++i) {
    if (op.dims[i].empty() || i >= op.types.size()) continue;
    const double b = static_cast<double>(elements(op.dims[i])) * element_bytes(op.types[i]);
    bytes += b;
    largest = std::max(largest, b);
  }
  // Only kernels moving a megabyte or more say something about bandwidth rather than launch latency.
  if (bytes + largest < 1e6 || k.dur_s <= 0 || gpu.hbm_Bps <= 0) {
    ++a.memory_without_shapes;
    return;
  }
  a.memory_hbm_eff.push_back((bytes + largest) / k.dur_s / gpu.hbm_Bps);
}

void overlaps(const KinetoTrace& t, TraceAnalysis& a) {
  std::map<int64_t, std::vector<std::pair<double, double>>> nccl;  // device -> kernel intervals
  for (const TraceKernel& k : t.kernels) {
    if (classify_kernel(k) == KernelClass::kNccl) nccl[k.device].emplace_back(k.start_s, k.start_s + k.dur_s);
  }
  std::map<std::string, std::vector<double>> alone, overlapped;
  for (const TraceKernel& k : t.kernels) {
    if (classify_kernel(k) != KernelClass::kGemm) continue;
    bool hit = false;
    for (const auto& [s, e] : nccl[k.device]) hit = hit || (s < k.start_s + k.dur_s && k.start_s < e);
    (hit ? overlapped : alone)[k.name].push_back(k.dur_s);
  }
  for (const auto& [name, durations] : overlapped) {
    a.gemm_overlapped += durations.size();
    const auto it = alone.find(name);
    if (it == alone.end()) continue;
    const double base = median(it->second);
    for (double d : durations) a.overlap_slowdown.push_back(d / base);
  }
}

void host_side(const KinetoTrace& t, TraceAnalysis& a) {
  std::map<std::pair<int64_t, int64_t>, std::vector<const TraceKernel*>> streams;
  for (const TraceKernel& k : t.kernels) {
    if (k.launch_s >= 0 && k.kind == ActivityKind::kKernel) a.launch_call_s.push_back(k.launch_dur_s);
    streams[{k.device, k.stream}].push_back(&k);
  }
  for (const auto& [key, ks] : streams) {
    double busy = 0, idle = 0, end = ks.front()->start_s;
    for (const TraceKernel* k : ks) {
      idle += std::max(0.0, k->start_s - end);
      busy += k->dur_s;
      end = std::max(end, k->start_s + k->dur_s);
    }
    if (busy > a.busiest_stream_busy_s) {
      a.busiest_stream_busy_s = busy;
      a.busiest_stream_idle_s = idle;
    }
  }
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string rate_line(const char* what, std::vector<double> v, const char* of) {
  if (v.empty()) return "";
  std::sort(v.begin(), v.end());
  const auto at = [&](double q) { return v[static_cast<size_t>(q * (v.size() - 1) + 0.5)]; };
  return std::string("  ") + what + ": median " + fixed(100 * median(v), 1) + "% of " + of + " over " +
         std::to_string(v.size()) + " kernels (p10-p90 " + fixed(100 * at(0.1), 1) + "-" + fixed(100 * at(0.9), 1) +
         "%)\n";
}

}  // namespace

TraceAnalysis analyse_trace(const KinetoTrace& trace, const sim::GpuSpec& gpu) {
  TraceAnalysis a;
  a.path = trace.path;
  for (const TraceKernel& k : trace.kernels) {
    const KernelClass c = classify_kernel(k);
    ++a.by_class[c].kernels;
    a.by_class[c].time_s += k.dur_s;
    if (c == KernelClass::kOther) {
      ClassTime& u = a.unclassified[kernel_short_name(k.name)];
      ++u.kernels;
      u.time_s += k.dur_s;
    }
    if (c == KernelClass::kAttention) attention_rate(trace, k, gpu, a);
    if (c == KernelClass::kMemory) memory_rate(trace, k, gpu, a);
  }
  overlaps(trace, a);
  host_side(trace, a);
  return a;
}

std::string analysis_text(const TraceAnalysis& a, const std::vector<std::string>& not_fitted) {
  std::string out = "trace " + echo_path(a.path) + ":\n  GPU time by kernel class:";
  for (const auto& [c, t] : a.by_class) {
    out +=
        std::string(" ") + class_name(c) + " " + fixed(t.time_s * 1e3, 3) + " ms (" + std::to_string(t.kernels) + ")";
  }
  out += "\n";
  if (!a.unclassified.empty()) {
    out += "  unclassified kernels (counted as other, fit nothing):\n";
    for (const auto& [name, t] : a.unclassified) {
      out += "    " + std::to_string(t.kernels) + " x " + echo_value(name, 100) + ": " + fixed(t.time_s * 1e3, 3) +
             " ms\n";
    }
  }
  out += rate_line("attention forward (reported; the profile's attention rates stay)", a.attention_forward_eff,
                   "the bf16 peak");
  out += rate_line("attention backward (2.5x forward FLOPs; reported)", a.attention_backward_eff, "the bf16 peak");
  if (a.attention_without_shapes) {
    out += "  " + std::to_string(a.attention_without_shapes) +
           " attention kernels without a q shape [b, h, s, d]: no rate\n";
  }
  out += rate_line("memory-bound kernels of 1 MB or more (inputs read + largest written; reported)", a.memory_hbm_eff,
                   "HBM bandwidth");
  if (a.gemm_overlapped) {
    out += "  " + std::to_string(a.gemm_overlapped) + " GEMM kernels overlapped NCCL kernels";
    if (!a.overlap_slowdown.empty()) {
      out += "; " + std::to_string(a.overlap_slowdown.size()) +
             " have non-overlapped runs of the same kernel: median " + fixed(median(a.overlap_slowdown), 3) +
             "x their time (SM-sharing slowdown data; no fitter consumes it yet)";
    }
    out += "\n";
  }
  if (!a.launch_call_s.empty()) {
    out += "  host: median launch call " + fixed(median(a.launch_call_s) * 1e6, 2) + " us over " +
           std::to_string(a.launch_call_s.size()) + " kernels; busiest stream idle " +
           fixed(a.busiest_stream_idle_s * 1e3, 3) + " ms between its kernels (busy " +
           fixed(a.busiest_stream_busy_s * 1e3, 3) + " ms; reported)\n";
  }
  for (const std::string& line : not_fitted) out += "  not fitted: " + line + "\n";
  return out;
}

}  // namespace tpsim::calibrate
