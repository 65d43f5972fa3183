// Summing a trace and a simulated variant by kernel class and module, and the tables comparing them.
#include "calibrate/trace/trace_compare.hpp"

#include <algorithm>
#include <cstdio>

namespace tpsim::calibrate {

namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string error_text(double measured, double predicted) {
  if (measured <= 0) return predicted > 0 ? "(not in the trace)" : "";
  if (predicted <= 0) return "(none predicted)";
  return (predicted >= measured ? "+" : "") + fixed(100 * (predicted / measured - 1), 1) + "%";
}

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string lpad(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string table(const char* what, const std::vector<std::string>& keys, const std::map<std::string, double>& m,
                  const std::map<std::string, double>& p) {
  std::string out = pad(what, 14) + lpad("measured ms", 12) + lpad("predicted ms", 14) + "  error\n";
  double total_m = 0, total_p = 0;
  for (const std::string& key : keys) {
    const double mv = m.count(key) ? m.at(key) : 0, pv = p.count(key) ? p.at(key) : 0;
    if (mv == 0 && pv == 0) continue;
    total_m += mv;
    total_p += pv;
    out +=
        pad(key, 14) + lpad(fixed(mv * 1e3, 3), 12) + lpad(fixed(pv * 1e3, 3), 14) + "  " + error_text(mv, pv) + "\n";
  }
  out += pad("sum", 14) + lpad(fixed(total_m * 1e3, 3), 12) + lpad(fixed(total_p * 1e3, 3), 14) + "  " +
         error_text(total_m, total_p) + "\n";
  return out;
}

}  // namespace

StepTimes measured_step(const KinetoTrace& trace, int steps, const std::vector<ModuleRule>& rules,
                        const ModuleWidths& widths) {
  std::map<int64_t, double> busy;
  for (const TraceKernel& k : trace.kernels) busy[k.device] += k.dur_s;
  int64_t device = 0;
  double most = -1;
  for (const auto& [d, t] : busy) {
    if (t > most) most = t, device = d;
  }
  StepTimes out;
  out.steps = std::max(1, steps);
  double first = 0, last = 0;
  bool any = false;
  for (const TraceKernel& k : trace.kernels) {
    if (k.device != device) continue;
    const KernelClass c = classify_kernel(k);
    out.by_class[class_name(c)] += k.dur_s / out.steps;
    out.by_module[module_of(trace, k, c, rules, widths)] += k.dur_s / out.steps;
    first = any ? std::min(first, k.start_s) : k.start_s;
    last = any ? std::max(last, k.start_s + k.dur_s) : k.start_s + k.dur_s;
    any = true;
  }
  out.step_s = (last - first) / out.steps;
  return out;
}

StepTimes predicted_step(const sim::VariantRun& variant) {
  StepTimes out;
  for (const sim::PassTrace& pass : variant.passes) {
    for (const sim::OpSpan& span : pass.timeline.spans) {
      if (span.rank != 0) continue;
      const model::Op& op = pass.graph.op(span.op);
      const double d = span.end_s - span.start_s;
      const bool optimizer = op.stage == model::OpStage::kOptimizer;
      std::string cls;
      switch (op.kind) {
        case model::OpKind::kGemm:
          cls = "gemm";
          break;
        case model::OpKind::kAttention:
          cls = "attention";
          break;
        case model::OpKind::kMemory:
          cls = optimizer ? "optimizer" : "memory-bound";
          break;
        case model::OpKind::kCollective:
        case model::OpKind::kExchange:
          cls = op.stream == model::Stream::kCopy ? "copy" : "nccl";
          break;
      }
      out.by_class[cls] += d;
      const std::string module = optimizer            ? "optimizer"
                                 : op.module < 0      ? "other"
                                 : op.module % 2 == 0 ? "attention"
                                                      : "ffn";
      out.by_module[module] += d;
    }
  }
  out.step_s = variant.metrics.time_s;
  return out;
}

std::string comparison_text(const StepTimes& measured, const StepTimes& predicted) {
  const std::vector<std::string> classes = names_of(kKernelClassNames);
  std::string out = "GPU time per step by kernel class (kernel durations summed; overlapped kernels count in full):\n" +
                    table("class", classes, measured.by_class, predicted.by_class);
  out += "\nGPU time per step by module (" + std::string("unattributed: measured kernels whose ops name no module") +
         "):\n" + table("module", module_names(), measured.by_module, predicted.by_module);
  out += "\nstep time (first kernel's start to last kernel's end): measured " + fixed(measured.step_s * 1e3, 3) +
         " ms, predicted " + fixed(predicted.step_s * 1e3, 3) + " ms, error " +
         error_text(measured.step_s, predicted.step_s) + "\n";
  return out;
}

}  // namespace tpsim::calibrate
