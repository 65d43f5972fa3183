// The measurement schema (docs/calibration.md): JSON lines, one measured point each, with provenance. real/
// writes it; converters turn public tables and nccl-tests logs into it; fitters read only it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tpsim::calibrate {

// kind "gemm": m, n, k, dtype.  kind "collective": collective (allreduce, allgather, reducescatter,
// alltoall, sendrecv),
// algorithm as run (ring, nvls, one_shot, two_shot, or unknown), protocol as run (simple, ll, ll128 when
// NCCL_PROTO forced it, else unknown), ranks, bytes (the whole tensor), timed_as (how each call was timed,
// sim/cost/call_timing.hpp: nccl-tests, calls launched back to back as nccl-tests and tpsim-real do, the default;
// torch, one call through torch.distributed on an idle GPU, its host work inside the median; graph, the
// device's time alone: CUDA-graph replays, or calls queued ahead of a busy GPU; files written before it say
// timed_through nccl or torch.distributed instead); across
// nodes also nodes (dividing ranks; default 1) and, when known, nic_GBps (each GPU's NIC, one direction).
// kind "memcpy": path (peer, device, copy_kernel), bytes, and spec_GBps of the link when known; path peer_all_ranks:
// one pull of `bytes` while each of `ranks` GPUs pulls from another at once (the copy-engine pulls of async TP's
// all-gather), median_s the time per pull.
// kind "launch": a chain of `kernels` empty kernels launched one by one (pattern same_stream), or
// alternating between two streams, each waiting on the previous one's event (cross_stream); median_s
// is the whole chain's time. The _queued patterns time the same chains queued whole behind a busy
// kernel before the GPU starts them: the GPU's own time per kernel and per wait, without the host's.
// Composite kinds (real/ measures them; validate compares them with the simulator), each with its
// baseline's median in baseline_s and the composite's own time in median_s / p10_s / p90_s:
//   "overlap": a GEMM (m, n, k, dtype) concurrent with a partner (pattern: memcpy_device,
//     memcpy_peer, copy_kernel, or a collective name) of `bytes` over `ranks` GPUs; gemm_alone_s,
//     partner_alone_s, gemm_overlapped_s; baseline_s = gemm_alone_s + partner_alone_s.
//   "async_tp": pattern allgather_gemm or gemm_reducescatter of the unsharded GEMM m x n x k over
//     `ranks` GPUs in `chunks` chunks over `transport` (nccl, copy_engine); baseline: unchunked.
//   "dtp": a chain of `modules` GEMMs (per-rank m x n x k) over `ranks` GPUs run as a scenario's
//     tp_mode dtp runs its modules with that `delta` (model/parallel/dtp_schedule.hpp: module j's all-reduce is
//     added by module j + 1 + delta; delta 0 is blocking TP); baseline: blocking TP. Lines carry
//     "delta_convention": "scenario"; older lines counted delta from 1 for blocking TP and ran another
//     chain, and are refused.
// kind "decode": a serving engine's generate run (`tpsim run` phase generate over the whole model),
//   median_s its whole time (batch x gen_len tokens / the tokens/s it reports): model (a model preset),
//   ranks (TP), batch, context_len (the prompt), gen_len (new tokens), and optionally implementation (a
//   preset), collective (the all-reduce its TP runs: nccl, one_shot, two_shot, auto; default nccl),
//   cuda_graphs (default true), power_limit_W, topology (default nvswitch). It calibrates the memory-bound
//   regime of its GPU's profile (calibrate/fits/decode_fit.hpp).
// Every kind may carry gpu_state: what NVML said about the GPUs while the point was timed.
inline constexpr const char* kDtpDeltaConvention = "scenario";
// How a collective's calls were timed (Measurement::timed_as; sim::CallTiming's names).
inline constexpr const char* kTimedAsNcclTests = "nccl-tests";
inline constexpr const char* kTimedAsTorch = "torch";
inline constexpr const char* kTimedAsGraph = "graph";

// Smallest, median and largest of a quantity over a point's readings.
struct Spread {
  double min = 0, median = 0, max = 0;
};

// The GPUs' state while a point was timed, read from NVML every few tens of milliseconds by tpsim-real.
// Not recorded: `why_not` says why (NVML missing or failing); empty in files that do not have it
// (other tools, tpsim-real before it recorded this).
struct GpuState {
  bool recorded = false;
  std::string why_not;
  int readings = 0;
  Spread sm_clock_mhz;
  Spread power_W;
  Spread temperature_C;
  double power_limit_W = 0;  // the enforced power limit while timed (the largest read); 0: not read
};

struct Measurement {
  std::string kind;
  std::string gpu;
  // gemm
  int64_t m = 0, n = 0, k = 0;
  std::string dtype = "bf16";
  // collective / memcpy
  std::string collective;
  std::string algorithm = "unknown";
  std::string protocol = "unknown";          // collective: NCCL_PROTO as run
  std::string timed_as = kTimedAsNcclTests;  // collective: nccl-tests, torch or graph
  int ranks = 0;
  int nodes = 1;        // collective: nodes the ranks fill, ranks / nodes GPUs each
  double nic_GBps = 0;  // collective across nodes: each GPU's NIC, one direction (0: not stated)
  double bytes = 0;
  std::string path;      // memcpy
  double spec_GBps = 0;  // memcpy: the link's nominal one-direction bandwidth
  // composite kinds
  std::string pattern;
  std::string transport;
  int chunks = 0;
  int kernels = 0;  // launch
  int modules = 0;
  int delta = 0;
  double baseline_s = 0;
  double gemm_alone_s = 0;
  double partner_alone_s = 0;
  double gemm_overlapped_s = 0;
  // decode
  std::string model;
  int64_t batch = 0, context_len = 0, gen_len = 0;
  std::string implementation;  // empty: the idealised layer
  bool cuda_graphs = true;
  double power_limit_W = 0;  // 0: the GPU preset's
  std::string topology = "nvswitch";
  // timing (seconds) and its spread
  double median_s = 0;
  double p10_s = 0;
  double p90_s = 0;
  bool correct = true;
  GpuState gpu_state;
  nlohmann::ordered_json provenance = nlohmann::ordered_json::object();
  // What the point adds beyond the schema (noise, sample counts, the correctness check's error, ...).
  nlohmann::ordered_json details = nlohmann::ordered_json::object();
  std::string origin;  // file:line it was read from

  double tflops() const;        // gemm: 2mnk / median
  double algbw_GBps() const;    // collective, memcpy: bytes / median / 1e9
  double speedup() const;       // composite kinds: baseline_s / median_s
  double tokens_per_s() const;  // decode: batch x gen_len / median_s
  bool is_composite() const;    // overlap, async_tp, dtp
  // collective: timed one call at a time through torch.distributed on an idle GPU, the host's time per call
  // (launch.host_us and launch.collective_host_us) in the median.
  bool host_in_time() const { return timed_as == kTimedAsTorch; }
  double busbw_GBps() const;  // collective: algbw x 2(n-1)/n (all-reduce), (n-1)/n (all-gather, reduce-scatter,
                              // all-to-all) or 1 (send/recv), as nccl-tests defines it
};

// The schema's algorithm / protocol of a collective run under NCCL_ALGO / NCCL_PROTO = `value` (any
// case): the one it names (ring, tree, nvls / simple, ll, ll128), else "unknown": a list, an exclusion
// (^...) or a name tpsim does not model leaves NCCL choosing.
std::string algorithm_forced_by(const std::string& nccl_algo);
std::string protocol_forced_by(const std::string& nccl_proto);

// nccl-tests' bus factor of `collective` (a schema name) over `ranks`: 2(n-1)/n for all-reduce, (n-1)/n
// for all-gather, reduce-scatter and all-to-all, 1 for send/recv (busbw = algbw x factor).
double bus_factor(const std::string& collective, int ranks);

// Reads a JSON-lines file; any bad line (not JSON, unknown kind, missing or non-positive field,
// NaN) is an InputError naming file:line and the field.
std::vector<Measurement> read_measurements(const std::string& path);
// The text of a measurement file (or nccl-tests log), within the size limit for input files.
std::string read_measurement_text(const std::string& path);
// The measurements of a file's text; `path` names it in errors.
std::vector<Measurement> parse_measurements(const std::string& text, const std::string& path);
Measurement parse_measurement(const std::string& line, const std::string& origin);

nlohmann::ordered_json to_json(const Measurement& m);
std::string to_jsonl(const std::vector<Measurement>& measurements);

}  // namespace tpsim::calibrate
