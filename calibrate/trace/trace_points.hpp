// A profiler trace as calibration data: the single-op measurement points it holds (GEMMs with their
// launching op's shapes, NCCL collectives with record_param_comms' sizes, device and peer memcpys), each
// named by the trace and the kernels it came from, and what it holds that fits nothing (with why).
#pragma once

#include <string>
#include <vector>

#include "base/measurement.hpp"
#include "calibrate/trace/kineto_trace.hpp"

namespace tpsim::calibrate {

// The GEMM an op ran: m x n x k and dtype from its Input Dims / Input type (aten::mm, addmm, linear, matmul),
// or m = 0 when its shapes do not say.
struct OpGemm {
  int64_t m = 0, n = 0, k = 0;
  std::string dtype;  // bf16, fp8, or the trace's type name when tpsim models no GEMM of it (float)
};
OpGemm gemm_of_op(const TraceOp& op);

// Bytes per element of a trace's type name ("c10::BFloat16", "float", record_param_comms' "BFloat16", ...);
// 0 when unknown.
int element_bytes(const std::string& type);

// The innermost op around kernel `k`'s launch, or its nearest enclosing op whose name contains `part` when
// given (empty: the innermost); -1 when none.
int launching_op(const KinetoTrace& trace, const TraceKernel& k, const std::string& part = "");

// The points of one trace on `gpu` (a GPU preset): GEMMs grouped by shape, dtype and kernel (their median
// time), collectives by kind, size and group (their fastest call: a call's kernel also waits for the slowest
// peer), memcpys by path and size (median). `not_fitted` gets one line per kind of kernel that fits nothing,
// with how many and why.
std::vector<Measurement> trace_points(const KinetoTrace& trace, const std::string& gpu,
                                      std::vector<std::string>& not_fitted);

}  // namespace tpsim::calibrate
