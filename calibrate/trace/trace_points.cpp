// Turning a trace's GEMM, NCCL and memcpy activities into measurement points.
#include "calibrate/trace/trace_points.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "base/input_error.hpp"
#include "calibrate/trace/kernel_class.hpp"

namespace tpsim::calibrate {

namespace {

int64_t product(const std::vector<int64_t>& dims, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to && i < dims.size(); ++i) {
    if (__builtin_mul_overflow(p, dims[i], &p)) return 0;  // no tensor this large: no GEMM read from it
  }
  return p;
}

std::string gemm_dtype(const std::string& type) {
  if (type == "c10::BFloat16" || type == "c10::Half") return "bf16";  // the same tensor-core peak
  if (type.find("Float8") != std::string::npos) return "fp8";
  return type.empty() ? "unknown" : type;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// The schema's collective of record_param_comms' name; empty for those tpsim does not model.
std::string schema_collective(const std::string& name) {
  std::string n;
  for (char c : name) {
    if (c != '_') n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (n.find("allreduce") != std::string::npos) return "allreduce";
  if (n.find("allgather") != std::string::npos) return "allgather";
  if (n.find("reducescatter") != std::string::npos) return "reducescatter";
  if (n.find("alltoall") != std::string::npos) return "alltoall";
  if (n == "send" || n == "recv" || n == "sendrecv") return "sendrecv";
  return "";
}

// A group of like activities: their durations and the first event.
struct Group {
  std::vector<double> durations;
  std::string kernel;
  size_t first_event = 0;
  void add(const TraceKernel& k, double dur) {
    if (durations.empty()) {
      kernel = kernel_short_name(k.name);
      first_event = k.event;
    }
    durations.push_back(dur);
  }
};

std::string origin(const KinetoTrace& t, const Group& g, const std::string& what, const char* how = "") {
  return echo_path(t.path) + ": " + what + ", " + how + std::to_string(g.durations.size()) + " kernel" +
         (g.durations.size() == 1 ? "" : "s") + " " + echo_value(g.kernel, 60) + " (first traceEvents[" +
         std::to_string(g.first_event) + "])";
}

void count(std::map<std::string, int>& reasons, const std::string& why) {
  ++reasons[why];
}

// A trace's kernels sorted into groups of like activities, and how many were left out for each reason.
struct TraceGroups {
  std::map<std::tuple<int64_t, int64_t, int64_t, std::string, std::string>, Group> gemms;
  std::map<std::tuple<std::string, double, int, std::string, std::string, std::string>, Group> collectives;
  std::map<std::pair<std::string, double>, Group> copies;
  std::map<std::string, int> reasons;
  // GEMM kernels per launching op: an op's GEMM kernels (split-K and its reduction) add up.
  std::map<int, std::pair<double, const TraceKernel*>> gemm_ops;
};

void add_gemm_kernel(const TraceKernel& k, TraceGroups& groups) {
  if (k.op < 0) {
    count(groups.reasons, "GEMM kernels without their launching op (no correlation id or ac2g flow to a CPU op)");
    return;
  }
  auto& [dur, first] = groups.gemm_ops[k.op];
  dur += k.dur_s;
  if (!first) first = &k;
}

void add_nccl_kernel(const KinetoTrace& trace, const TraceKernel& k, TraceGroups& groups) {
  std::map<std::string, int>& reasons = groups.reasons;
  // record_param_comms encloses the launch (c10d::allreduce_ > record_param_comms > nccl:all_reduce).
  int comm = k.op;
  while (comm >= 0 && trace.ops[comm].comm.collective.empty()) comm = trace.ops[comm].parent;
  if (comm < 0 || trace.ops[comm].comm.collective.empty()) {
    count(reasons, "NCCL kernels without record_param_comms sizes (the PyTorch that wrote the trace recorded none)");
    return;
  }
  const CommParams& p = trace.ops[comm].comm;
  const std::string kind = schema_collective(p.collective);
  if (kind.empty()) {
    count(reasons, "NCCL " + echo_value(p.collective, 30) +
                       " calls (tpsim models all-reduce, all-gather, "
                       "reduce-scatter, all-to-all and send/recv)");
    return;
  }
  if (p.group_size < 2) {
    count(reasons, "NCCL calls in groups of fewer than 2 ranks");
    return;
  }
  if (p.group_size > 8) {
    count(reasons, "NCCL calls in groups of more than 8 ranks (a trace does not say how many nodes they span)");
    return;
  }
  const int bytes_per = element_bytes(p.dtype);
  const int64_t nelems = kind == "allgather" ? p.out_nelems : p.in_nelems;
  if (bytes_per == 0 || nelems <= 0) {
    count(reasons, "NCCL calls with no size or an unknown dtype");
    return;
  }
  const NcclKernelName name = parse_nccl_kernel(k.name);
  groups
      .collectives[{kind, static_cast<double>(nelems) * bytes_per, p.group_size, name.algorithm, name.protocol,
                    p.group}]
      .add(k, k.dur_s);
}

// A peer copy launched inside one of PyTorch's symmetric-memory ops (symm_mem::fused_all_gather_matmul and the
// others: async TP) is a pull while every rank of the group pulls at once; any other is a copy between two GPUs.
void add_copy_kernel(const KinetoTrace& trace, const TraceKernel& k, TraceGroups& groups) {
  const bool peer = k.name.find("PtoP") != std::string::npos;
  if (k.kind != ActivityKind::kMemcpy || !peer) {
    count(groups.reasons, "host, device-to-device copies and memsets (the copy engine is fitted on peer copies)");
    return;
  }
  if (k.bytes <= 0) {
    count(groups.reasons, "memcpys without bytes");
    return;
  }
  const bool all_ranks = launching_op(trace, k, "symm_mem::") >= 0;
  if (all_ranks && trace.world_size < 2) {
    count(groups.reasons, "async-TP pulls in a trace that does not say its world size (distributedInfo)");
    return;
  }
  groups.copies[{all_ranks ? "peer_all_ranks" : "peer", k.bytes}].add(k, k.dur_s);
}

// Each launching op's GEMM kernels, as one GEMM of the op's shape, into groups.gemms.
void group_gemm_ops(const KinetoTrace& trace, TraceGroups& groups) {
  for (const auto& [op, entry] : groups.gemm_ops) {
    const OpGemm g = gemm_of_op(trace.ops[op]);
    if (g.m == 0) {
      count(groups.reasons,
            trace.record_shapes
                ? "GEMM kernels whose op records no matmul shape (" + echo_value(trace.ops[op].name, 40) + ")"
                : "GEMM kernels without shapes (the trace was recorded without record_shapes)");
      continue;
    }
    if (g.dtype != "bf16" && g.dtype != "fp8") {
      count(groups.reasons,
            "GEMMs in " + echo_value(g.dtype, 20) + " (tpsim's GEMM model is of bf16 and fp8 tensor cores)");
      continue;
    }
    groups.gemms[{g.m, g.n, g.k, g.dtype, entry.second->name}].add(*entry.second, entry.first);
  }
}

// A measurement of this kind, GPU and trace, its values still to fill.
Measurement trace_measurement(const KinetoTrace& trace, const std::string& gpu, const char* kind) {
  Measurement m;
  m.kind = kind;
  m.gpu = gpu;
  m.provenance["source"] = "profiler trace";
  m.provenance["trace"] = trace.path;
  return m;
}

void add_gemm_points(const KinetoTrace& trace, const std::string& gpu, const decltype(TraceGroups::gemms)& gemms,
                     std::vector<Measurement>& out) {
  for (const auto& [key, g] : gemms) {
    Measurement m = trace_measurement(trace, gpu, "gemm");
    std::tie(m.m, m.n, m.k, m.dtype, std::ignore) = key;
    m.median_s = median(g.durations);
    m.p10_s = *std::min_element(g.durations.begin(), g.durations.end());
    m.p90_s = *std::max_element(g.durations.begin(), g.durations.end());
    m.origin =
        origin(trace, g, std::to_string(m.m) + "x" + std::to_string(m.n) + "x" + std::to_string(m.k) + " " + m.dtype);
    if (m.median_s > 0) out.push_back(m);
  }
}

void add_collective_points(const KinetoTrace& trace, const std::string& gpu,
                           const decltype(TraceGroups::collectives)& collectives, std::vector<Measurement>& out) {
  for (const auto& [key, g] : collectives) {
    Measurement m = trace_measurement(trace, gpu, "collective");
    std::string group;
    std::tie(m.collective, m.bytes, m.ranks, m.algorithm, m.protocol, group) = key;
    m.timed_as = kTimedAsGraph;  // a kernel's own time on the device
    m.median_s = *std::min_element(g.durations.begin(), g.durations.end());
    m.p10_s = m.median_s;
    m.p90_s = *std::max_element(g.durations.begin(), g.durations.end());
    m.details["calls"] = g.durations.size();
    m.details["group"] = group;
    m.origin = origin(trace, g,
                      m.collective + " of " + std::to_string(static_cast<int64_t>(m.bytes)) + " B over " +
                          std::to_string(m.ranks) + " ranks",
                      "the fastest of ");
    if (m.median_s > 0) out.push_back(m);
  }
}

void add_copy_points(const KinetoTrace& trace, const std::string& gpu, const decltype(TraceGroups::copies)& copies,
                     std::vector<Measurement>& out) {
  for (const auto& [key, g] : copies) {
    Measurement m = trace_measurement(trace, gpu, "memcpy");
    std::tie(m.path, m.bytes) = key;
    if (m.path == "peer_all_ranks") m.ranks = trace.world_size;  // the symmetric-memory group: the whole job's
    m.median_s = median(g.durations);
    m.p10_s = *std::min_element(g.durations.begin(), g.durations.end());
    m.p90_s = *std::max_element(g.durations.begin(), g.durations.end());
    m.origin = origin(trace, g, m.path + " copy of " + std::to_string(static_cast<int64_t>(m.bytes)) + " B");
    if (m.median_s > 0) out.push_back(m);
  }
}

}  // namespace

OpGemm gemm_of_op(const TraceOp& op) {
  OpGemm g;
  const auto& d = op.dims;
  const auto type = [&](size_t i) { return i < op.types.size() ? gemm_dtype(op.types[i]) : "unknown"; };
  if ((op.name == "aten::mm" || op.name == "aten::matmul") && d.size() >= 2 && d[0].size() >= 2 && d[1].size() == 2) {
    g = {product(d[0], 0, d[0].size() - 1), d[1][1], d[0].back(), type(0)};
  } else if (op.name == "aten::addmm" && d.size() >= 3 && d[1].size() == 2 && d[2].size() == 2) {
    g = {d[1][0], d[2][1], d[1][1], type(1)};
  } else if (op.name == "aten::linear" && d.size() >= 2 && d[0].size() >= 2 && d[1].size() == 2) {
    g = {product(d[0], 0, d[0].size() - 1), d[1][0], d[0].back(), type(0)};
  } else if (op.name == "aten::_scaled_mm" && d.size() >= 2 && d[0].size() == 2 && d[1].size() == 2) {
    g = {d[0][0], d[1][1], d[0][1], "fp8"};
  }
  // A GEMM past 2^40 in any dimension is a corrupt shape rather than a kernel tpsim can fit.
  constexpr int64_t kMaxDim = int64_t{1} << 40;
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.m > kMaxDim || g.n > kMaxDim || g.k > kMaxDim) g = {};
  return g;
}

int element_bytes(const std::string& type) {
  static const std::map<std::string, int> kBytes = {{"float", 4},
                                                    {"c10::BFloat16", 2},
                                                    {"c10::Half", 2},
                                                    {"double", 8},
                                                    {"long int", 8},
                                                    {"int", 4},
                                                    {"bool", 1},
                                                    {"unsigned char", 1},
                                                    {"signed char", 1},
                                                    {"c10::Float8_e4m3fn", 1},
                                                    {"c10::Float8_e5m2", 1},
                                                    {"Float", 4},
                                                    {"BFloat16", 2},
                                                    {"Half", 2},
                                                    {"Double", 8},
                                                    {"Long", 8},
                                                    {"Int", 4},
                                                    {"Byte", 1},
                                                    {"Char", 1},
                                                    {"Bool", 1},
                                                    {"Float8_e4m3fn", 1},
                                                    {"Float8_e5m2", 1}};
  const auto it = kBytes.find(type);
  return it == kBytes.end() ? 0 : it->second;
}

int launching_op(const KinetoTrace& trace, const TraceKernel& k, const std::string& part) {
  int op = k.op;
  while (op >= 0 && !part.empty() && trace.ops[op].name.find(part) == std::string::npos) op = trace.ops[op].parent;
  return op;
}

std::vector<Measurement> trace_points(const KinetoTrace& trace, const std::string& gpu,
                                      std::vector<std::string>& not_fitted) {
  TraceGroups groups;
  for (const TraceKernel& k : trace.kernels) {
    const KernelClass c = classify_kernel(k);
    if (c == KernelClass::kGemm) {
      add_gemm_kernel(k, groups);
    } else if (c == KernelClass::kNccl) {
      add_nccl_kernel(trace, k, groups);
    } else if (c == KernelClass::kCopy) {
      add_copy_kernel(trace, k, groups);
    }
  }
  group_gemm_ops(trace, groups);
  std::vector<Measurement> out;
  add_gemm_points(trace, gpu, groups.gemms, out);
  add_collective_points(trace, gpu, groups.collectives, out);
  add_copy_points(trace, gpu, groups.copies, out);
  for (const auto& [why, n] : groups.reasons) not_fitted.push_back(std::to_string(n) + " " + why);
  return out;
}

}  // namespace tpsim::calibrate
