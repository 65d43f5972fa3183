// tpsim-real collective: NCCL collectives over a size sweep, out-of-place and in-place, every rank
// timing its own stream; a sample's time is the slowest rank's. Each size is checked once on every
// rank against the host reference before it is timed. Calls are launched back to back (as nccl-tests times
// them), or with --graph replayed from a CUDA graph (the device's time alone, as nccl-tests -G).
#include <algorithm>
#include <cmath>
#include <functional>

#include "base/input_error.hpp"
#include "real/core/accuracy.hpp"
#include "real/core/collective_reference.hpp"
#include "real/core/measurement_log.hpp"
#include "real/core/points.hpp"
#include "real/core/text_table.hpp"
#include "real/cuda/benches.hpp"
#include "real/cuda/captured_graph.hpp"
#include "real/cuda/collective_ops.hpp"
#include "real/cuda/comm_team.hpp"
#include "real/cuda/device_info.hpp"
#include "real/cuda/event_timer.hpp"
#include "real/cuda/gemm_check.hpp"

namespace tpsim::real {
namespace {

// Launches per sample, the same on every rank (ranks must issue the same collectives), from a
// deliberately low estimate of one launch so that samples are at least about min_sample_s long: the
// latency floor of NCCL's small collectives on 8 H100s (about 20 us, collectives_h100_latency.csv)
// and a bus rate below any NVLink GPU's (50 GB/s; H100 rings reach 337). At most 1000 launches a
// sample, so that a sample of the smallest messages stays under a few tens of milliseconds.
int collective_launches(const TimingOptions& timing, int64_t bytes) {
  if (timing.launches > 0) return timing.launches;
  constexpr double kLatencyFloor_s = 20e-6, kLowBusBps = 50e9, kMaxLaunches = 1000;
  const double estimate = kLatencyFloor_s + static_cast<double>(bytes) / kLowBusBps;
  return static_cast<int>(std::clamp(std::ceil(timing.min_sample_s / estimate), 1.0, kMaxLaunches));
}

// Device buffers of one rank for one call; `in_place` follows NCCL's in-place layouts.
struct CallBuffers {
  DeviceBuffer send_storage, recv_storage;
  const void* send = nullptr;
  void* recv = nullptr;
};

CallBuffers make_buffers(const CollectiveCall& c, const Rank& rank, bool in_place) {
  const size_t elem = element_bytes(c.type);
  CallBuffers b;
  const auto send_bytes = static_cast<size_t>(c.counts.send) * elem;
  const auto recv_bytes = static_cast<size_t>(c.counts.recv) * elem;
  if (!in_place) {
    b.send_storage = DeviceBuffer(rank.device, send_bytes);
    b.recv_storage = DeviceBuffer(rank.device, recv_bytes);
    b.send = b.send_storage.get();
    b.recv = b.recv_storage.get();
  } else if (c.collective == Collective::kAllGather) {
    b.recv_storage = DeviceBuffer(rank.device, recv_bytes);
    b.recv = b.recv_storage.get();
    b.send = b.recv_storage.at(static_cast<size_t>(c.rank) * send_bytes);
  } else if (c.collective == Collective::kReduceScatter) {
    b.send_storage = DeviceBuffer(rank.device, send_bytes);
    b.send = b.send_storage.get();
    b.recv = b.send_storage.at(static_cast<size_t>(c.rank) * recv_bytes);
  } else {  // all-reduce
    b.recv_storage = DeviceBuffer(rank.device, recv_bytes);
    b.recv = b.recv_storage.get();
    b.send = b.recv;
  }
  return b;
}

struct PointResult {
  std::vector<double> seconds;
  double error = 0;
  int launches = 1;
};

// Timed launches of `enqueue`: back to back, or (graph_calls > 0) as replays of a CUDA graph of graph_calls calls,
// each replay's time shared among its calls; every rank replays the same count (ranks issue the same calls).
TimedRun time_calls(cudaStream_t stream, const RealOptions& o, int launches, const std::function<void()>& enqueue) {
  if (o.graph_calls == 0) return time_launches(stream, o.timing, launches, [&](int) { enqueue(); });
  const CapturedGraph graph(stream, o.graph_calls, enqueue);
  const int replays = std::max(1, launches / o.graph_calls);
  TimedRun run = time_launches(stream, o.timing, replays, [&](int) { graph.launch(stream); });
  for (double& s : run.seconds) s /= o.graph_calls;
  run.launches = replays * o.graph_calls;
  return run;
}

PointResult measure_on_rank(CommTeam& team, Rank& rank, const CollectiveCall& c, bool in_place, const RealOptions& o) {
  CallBuffers b = make_buffers(c, rank, in_place);
  if (!in_place || c.collective == Collective::kAllGather) {
    TPSIM_CUDA(cudaMemsetAsync(b.recv_storage.get(), 0xFF, b.recv_storage.bytes(), rank.comm_stream));
  }
  fill_uniform(const_cast<void*>(b.send), c.type, c.counts.send, o.seed,
               static_cast<uint64_t>(c.rank) * static_cast<uint64_t>(c.counts.send), rank.comm_stream);
  enqueue_collective(c, b.send, b.recv, rank.comm, rank.comm_stream);
  TPSIM_CUDA(cudaStreamSynchronize(rank.comm_stream));
  PointResult result;
  const double error = check_collective_outputs(c, b.recv, o.seed);
  const int64_t tensor_elements = std::max(c.counts.send, c.counts.recv);  // nccl-tests' size
  result.launches = collective_launches(o.timing, tensor_elements * static_cast<int64_t>(element_bytes(c.type)));
  const TimedRun run = time_calls(rank.comm_stream, o, result.launches,
                                  [&] { enqueue_collective(c, b.send, b.recv, rank.comm, rank.comm_stream); });
  result.launches = run.launches;
  result.seconds = team.max_over_ranks(rank, run.seconds);
  result.error = team.worst_error_over_ranks(rank, error);
  return result;
}

}  // namespace

int run_collective_bench(const RealOptions& o, const std::vector<std::string>& arguments) {
  CommTeam team(o, arguments);
  if (team.size() % o.nodes != 0) {
    throw InputError("--nodes " + std::to_string(o.nodes) + ": must divide the " + std::to_string(team.size()) +
                     " ranks (the same GPU count in every node)");
  }
  const ElementType type = element_type(o.collective_dtype);
  MeasurementLog log(team.leads() ? o.json_out : "");
  TextTable table({"collective", "placement", "bytes", "median us", "algbw GB/s", "busbw GB/s", "noise %", "check"});
  bool all_correct = true;
  for (Collective collective : o.collectives) {
    const int64_t alignment = size_alignment(collective, team.size(), static_cast<int64_t>(element_bytes(type)));
    for (int64_t bytes : o.sizes.resolve(alignment)) {
      for (bool in_place : {false, true}) {
        if (in_place &&
            (o.placement == "out" || collective == Collective::kAllToAll || collective == Collective::kSendRecv)) {
          continue;  // NCCL has no in-place form of these
        }
        if (!in_place && o.placement == "in") continue;
        std::vector<PointResult> results(team.local_ranks().size());
        GpuStateSampler gpu_state = sample_gpu_state(team.local_devices());
        team.run([&](Rank& rank) {
          const CollectiveCall c{
              collective, type,
              element_counts(collective, bytes, team.size(), static_cast<int64_t>(element_bytes(type))), rank.rank,
              team.size()};
          results[rank.local_index] = measure_on_rank(team, rank, c, in_place, o);
        });
        const PointResult& r = results.front();
        const double tolerance = type == ElementType::kBf16 ? kBf16Tolerance : kFloat32Tolerance;
        PointContext c{team.gpu(), team.provenance_json(),     summarize(r.seconds), r.launches,
                       r.error,    within(r.error, tolerance), gpu_state.finish(),   std::nullopt};
        all_correct = all_correct && c.correct;
        calibrate::Measurement m = collective_point(c, collective, team.size(), bytes, o.collective_dtype, in_place);
        m.nodes = o.nodes;
        if (o.nodes > 1) m.nic_GBps = o.nic_GBps;
        if (o.graph_calls > 0) {
          m.timed_as = calibrate::kTimedAsGraph;
          m.details["graph_calls"] = o.graph_calls;
        }
        log.add(m);
        table.add_row({schema_name(collective), in_place ? "in" : "out", std::to_string(bytes),
                       fixed(c.timing.median * 1e6, 1), fixed(m.algbw_GBps(), 2), fixed(m.busbw_GBps(), 2),
                       fixed(100 * c.timing.spread(), 1), c.correct ? "ok" : "FAILED"});
      }
    }
  }
  log.finish();
  if (team.leads()) {
    print_report(o, "NCCL collectives over " + std::to_string(team.size()) + " ranks\n" + table.str());
  }
  return all_correct ? 0 : 1;
}

}  // namespace tpsim::real
