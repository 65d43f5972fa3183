// Record construction; the field meanings are base/measurement.hpp's.
#include "real/core/points.hpp"

#include <cstdlib>

namespace tpsim::real {
namespace {

calibrate::Measurement base_point(const PointContext& c, const std::string& kind) {
  calibrate::Measurement m;
  m.kind = kind;
  m.gpu = c.gpu;
  m.median_s = c.timing.median;
  m.p10_s = c.timing.p10;
  m.p90_s = c.timing.p90;
  m.correct = c.correct;
  m.gpu_state = c.gpu_state;
  m.provenance = c.provenance;
  m.details["noise"] = c.timing.spread();
  m.details["samples"] = c.timing.samples;
  m.details["launches_per_sample"] = c.launches_per_sample;
  m.details["min_s"] = c.timing.min;
  m.details["check_error"] = c.check_error;
  if (c.late_samples) m.details["late_samples"] = *c.late_samples;
  return m;
}

void set_shape(calibrate::Measurement& m, const GemmCase& shape, const std::string& dtype) {
  m.m = shape.m;
  m.n = shape.n;
  m.k = shape.k;
  m.dtype = dtype;
}

}  // namespace

calibrate::Measurement gemm_point(const PointContext& c, const GemmCase& shape, const std::string& dtype) {
  calibrate::Measurement m = base_point(c, "gemm");
  set_shape(m, shape, dtype);
  if (!shape.example.empty()) m.details["example"] = shape.example;
  return m;
}

std::string algorithm_forced_by(const char* nccl_algo) {
  return nccl_algo ? calibrate::algorithm_forced_by(nccl_algo) : "unknown";
}

std::string protocol_forced_by(const char* nccl_proto) {
  return nccl_proto ? calibrate::protocol_forced_by(nccl_proto) : "unknown";
}

calibrate::Measurement collective_point(const PointContext& c, Collective collective, int ranks, int64_t bytes,
                                        const std::string& dtype, bool in_place) {
  calibrate::Measurement m = base_point(c, "collective");
  m.collective = schema_name(collective);
  // NCCL chooses, unless NCCL_ALGO / NCCL_PROTO name one algorithm / protocol (recorded either way).
  const char* nccl_algo = std::getenv("NCCL_ALGO");
  m.algorithm = algorithm_forced_by(nccl_algo);
  if (nccl_algo) m.details["nccl_algo"] = nccl_algo;
  const char* nccl_proto = std::getenv("NCCL_PROTO");
  m.protocol = protocol_forced_by(nccl_proto);
  if (nccl_proto) m.details["nccl_proto"] = nccl_proto;
  m.ranks = ranks;
  m.bytes = static_cast<double>(bytes);
  m.details["dtype"] = dtype;
  m.details["in_place"] = in_place;
  return m;
}

calibrate::Measurement launch_point(const PointContext& c, const std::string& pattern, int kernels) {
  calibrate::Measurement m = base_point(c, "launch");
  m.pattern = pattern;
  m.kernels = kernels;
  // The schema's time is the whole chain's; the timing summary is per chain already.
  m.details["per_kernel_us"] = c.timing.median / kernels * 1e6;
  return m;
}

calibrate::Measurement memcpy_point(const PointContext& c, const std::string& path, int64_t bytes) {
  calibrate::Measurement m = base_point(c, "memcpy");
  m.path = path;
  m.bytes = static_cast<double>(bytes);
  // A copy within one GPU reads and writes each byte: HBM moves twice the bytes.
  if (path == "device" || path == "copy_kernel")
    m.details["hbm_GBps"] = 2.0 * static_cast<double>(bytes) / c.timing.median / 1e9;
  return m;
}

calibrate::Measurement overlap_point(const PointContext& c, const GemmCase& shape, const std::string& dtype,
                                     const std::string& partner, int64_t bytes, int ranks, const OverlapTimes& t) {
  calibrate::Measurement m = base_point(c, "overlap");
  set_shape(m, shape, dtype);
  m.pattern = partner;
  m.bytes = static_cast<double>(bytes);
  m.ranks = ranks;
  m.gemm_alone_s = t.gemm_alone.median;
  m.partner_alone_s = t.partner_alone.median;
  m.gemm_overlapped_s = t.gemm_overlapped.median;
  m.baseline_s = m.gemm_alone_s + m.partner_alone_s;
  m.details["gemm_slowdown"] = t.gemm_overlapped.median / t.gemm_alone.median;
  return m;
}

calibrate::Measurement async_tp_point(const PointContext& c, const GemmCase& shape, const std::string& dtype,
                                      const std::string& pattern, int ranks, int chunks, const std::string& transport,
                                      const Summary& baseline) {
  calibrate::Measurement m = base_point(c, "async_tp");
  set_shape(m, shape, dtype);
  m.pattern = pattern;
  m.ranks = ranks;
  m.chunks = chunks;
  m.transport = transport;
  m.baseline_s = baseline.median;
  m.details["baseline_noise"] = baseline.spread();
  return m;
}

calibrate::Measurement dtp_point(const PointContext& c, const GemmCase& shape, const std::string& dtype, int ranks,
                                 int modules, int delta, const Summary& baseline) {
  calibrate::Measurement m = base_point(c, "dtp");
  set_shape(m, shape, dtype);
  m.pattern = "chain";
  m.ranks = ranks;
  m.modules = modules;
  m.delta = delta;
  m.baseline_s = baseline.median;
  m.details["baseline_noise"] = baseline.spread();
  return m;
}

}  // namespace tpsim::real
