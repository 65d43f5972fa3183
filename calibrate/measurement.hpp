// The measurement schema (DESIGN.md): JSON lines, one measured point each, with provenance. real/
// writes it; converters turn public tables and nccl-tests logs into it; fitters read only it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tpsim::calibrate {

// kind "gemm": m, n, k, dtype.  kind "collective": collective (allreduce, allgather, reducescatter,
// alltoall, sendrecv),
// algorithm as run (ring, nvls, one_shot, or unknown), ranks, bytes (the whole tensor).
// kind "memcpy": path (peer, device), bytes, and spec_GBps of the link when known.
struct Measurement {
  std::string kind;
  std::string gpu;
  // gemm
  int64_t m = 0, n = 0, k = 0;
  std::string dtype = "bf16";
  // collective / memcpy
  std::string collective;
  std::string algorithm = "unknown";
  int ranks = 0;
  double bytes = 0;
  std::string path;      // memcpy
  double spec_GBps = 0;  // memcpy: the link's nominal one-direction bandwidth
  // timing (seconds) and its spread
  double median_s = 0;
  double p10_s = 0;
  double p90_s = 0;
  bool correct = true;
  nlohmann::ordered_json provenance = nlohmann::ordered_json::object();
  std::string origin;  // file:line it was read from

  double tflops() const;      // gemm: 2mnk / median
  double algbw_GBps() const;  // collective, memcpy: bytes / median / 1e9
  double busbw_GBps() const;  // collective: algbw x 2(n-1)/n (all-reduce), (n-1)/n (all-gather, reduce-scatter,
                              // all-to-all) or 1 (send/recv), as nccl-tests defines it
};

// Reads a JSON-lines file; any bad line (not JSON, unknown kind, missing or non-positive field,
// NaN) is an InputError naming file:line and the field.
std::vector<Measurement> read_measurements(const std::string& path);
Measurement parse_measurement(const std::string& line, const std::string& origin);

nlohmann::ordered_json to_json(const Measurement& m);
std::string to_jsonl(const std::vector<Measurement>& measurements);

}  // namespace tpsim::calibrate
