// Measured results turned into calibrate/ measurement records: the schema fields, the details
// (noise, sample counts, the correctness check's error) and the run's provenance.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/measurement.hpp"
#include "real/core/collective.hpp"
#include "real/core/gemm_shapes.hpp"
#include "real/core/stats.hpp"

namespace tpsim::real {

// What every point carries: where it ran, its timing, and its check.
struct PointContext {
  std::string gpu;
  nlohmann::ordered_json provenance;
  Summary timing;
  int launches_per_sample = 1;
  double check_error = 0;  // relative error of the correctness check
  bool correct = true;
  calibrate::GpuState gpu_state;  // NVML's view of the GPUs while the point was timed
  // Queued iterations (composites) whose start the GPU reached before the host had queued them all.
  std::optional<int> late_samples;
};

calibrate::Measurement gemm_point(const PointContext& c, const GemmCase& shape, const std::string& dtype);
// The measurement's algorithm under NCCL_ALGO (null: unset): ring, tree or nvls when it names one
// (any case), else "unknown".
std::string algorithm_forced_by(const char* nccl_algo);
// The measurement's protocol under NCCL_PROTO (null: unset): simple, ll or ll128 when it names one
// (any case), else "unknown".
std::string protocol_forced_by(const char* nccl_proto);
calibrate::Measurement collective_point(const PointContext& c, Collective collective, int ranks, int64_t bytes,
                                        const std::string& dtype, bool in_place);
// A launch chain: `kernels` empty kernels on one stream or alternating between two (pattern).
calibrate::Measurement launch_point(const PointContext& c, const std::string& pattern, int kernels);
calibrate::Measurement memcpy_point(const PointContext& c, const std::string& path, int64_t bytes);

// An overlap point: `c.timing` is the pair together (start of both to end of the later).
struct OverlapTimes {
  Summary gemm_alone;
  Summary partner_alone;
  Summary gemm_overlapped;
};
calibrate::Measurement overlap_point(const PointContext& c, const GemmCase& shape, const std::string& dtype,
                                     const std::string& partner, int64_t bytes, int ranks, const OverlapTimes& t);

// A pipeline point (async_tp, dtp): `c.timing` is the pipelined run, `baseline` the unchunked /
// blocking one.
calibrate::Measurement async_tp_point(const PointContext& c, const GemmCase& shape, const std::string& dtype,
                                      const std::string& pattern, int ranks, int chunks, const std::string& transport,
                                      const Summary& baseline);
calibrate::Measurement dtp_point(const PointContext& c, const GemmCase& shape, const std::string& dtype, int ranks,
                                 int modules, int delta, const Summary& baseline);

}  // namespace tpsim::real
