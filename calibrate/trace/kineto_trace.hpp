// PyTorch profiler (Kineto) traces: Chrome-trace JSON, plain or gzipped, one file per rank. Reads the events
// tpsim uses (GPU kernels, memcpys and memsets, CPU ops with their recorded shapes, CUDA runtime launches)
// and joins each GPU activity to the CPU op that launched it through the correlation id (or, where the
// activity carries none, the ac2g flow ending on it). Other events (Python frames, annotations, counters,
// metadata) are ignored.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpsim::calibrate {

// What record_param_comms (torch.distributed's NCCL calls) recorded: empty collective when absent.
struct CommParams {
  std::string collective;  // as PyTorch names it: allreduce, allgather, _allgather_base, reduce_scatter, ...
  int64_t in_nelems = 0;
  int64_t out_nelems = 0;
  std::string dtype;  // Float, BFloat16, Half, ...
  int group_size = 0;
  std::string group;  // the process group's name (and description when given)
};

// A CPU op (cat cpu_op), with the shapes and types record_shapes adds (empty without it).
struct TraceOp {
  std::string name;
  double start_s = 0, dur_s = 0;
  int64_t pid = 0, tid = 0;
  std::vector<std::vector<int64_t>> dims;  // Input Dims: one list per input ([] for scalars and lists)
  std::vector<std::string> types;          // Input type: "c10::BFloat16", "float", "Scalar", ...
  std::vector<std::string> concrete;       // Concrete Inputs: scalars' values as text ("" for tensors)
  CommParams comm;                         // record_param_comms only
  int parent = -1;                         // the innermost op enclosing it on its thread, -1: none
  size_t event = 0;                        // its index in traceEvents
};

enum class ActivityKind { kKernel, kMemcpy, kMemset };

// A GPU activity, joined to its launch.
struct TraceKernel {
  ActivityKind kind = ActivityKind::kKernel;
  std::string name;
  double start_s = 0, dur_s = 0;
  int64_t device = 0, stream = 0;
  double bytes = 0;         // memcpy / memset: args.bytes
  int op = -1;              // the innermost CPU op around its launch, -1: none found
  double launch_s = -1;     // when the runtime call that launched it started, -1: not found
  double launch_dur_s = 0;  // that runtime call's duration
  size_t event = 0;
};

struct KinetoTrace {
  std::string path;
  bool record_shapes = false;      // the trace's record_shapes flag, or any op with Input Dims
  int rank = -1, world_size = -1;  // distributedInfo, -1: absent
  std::string device_name;         // deviceProperties[0].name, empty: absent
  std::vector<TraceOp> ops;
  std::vector<TraceKernel> kernels;  // in start order
  size_t events = 0;                 // traceEvents read
  int profiler_steps = 0;            // ProfilerStep#N annotations (torch.profiler with a schedule), 0: none
};

// Whether the bytes (plain or gzipped) are a Chrome-trace document with traceEvents: decided by content.
bool looks_like_kineto_trace(const std::string& bytes);

// The trace in `bytes` (plain or gzipped JSON); `path` names it in errors. InputError for text that is not
// JSON ("path:line:col: ..."), a document without a traceEvents list, or an event whose fields tpsim reads are
// missing or of the wrong type ("path: traceEvents[i] (name): what, what is valid").
KinetoTrace parse_kineto_trace(const std::string& bytes, const std::string& path);
KinetoTrace read_kineto_trace(const std::string& path);

}  // namespace tpsim::calibrate
