// tpsim-real async-tp: for each pattern, transport and chunk count, the chunked pipeline against the
// unchunked baseline (NCCL collective and whole GEMM), both timed per iteration queued behind a barrier
// and a spin (a sample is the slowest rank's iteration), and the pipeline's output checked against the
// baseline's.
#include <cmath>

#include "base/input_error.hpp"
#include "real/core/accuracy.hpp"
#include "real/core/measurement_log.hpp"
#include "real/core/points.hpp"
#include "real/core/text_table.hpp"
#include "real/cuda/async_tp_pipeline.hpp"
#include "real/cuda/benches.hpp"
#include "real/cuda/cuda_check.hpp"
#include "real/cuda/device_info.hpp"
#include "real/cuda/gemm_check.hpp"
#include "real/cuda/team_samples.hpp"

namespace tpsim::real {
namespace {

using Pipelines = std::vector<std::unique_ptr<AsyncTpPipeline>>;

// One pipelined iteration on every rank: the NCCL pipeline from each rank's thread, the copy-engine
// one step by step from this thread (behind one barrier for all ranks, queued from here too).
std::vector<IterationTime> pipelined_iteration(CommTeam& team, Pipelines& pipes, const std::string& transport) {
  std::vector<IterationTime> times(pipes.size());
  if (transport == "nccl") {
    team.run([&](Rank& rank) {
      AsyncTpPipeline& p = *pipes[rank.local_index];
      p.begin(true);
      p.enqueue_nccl_pipeline();
      const bool late = p.end();
      times[rank.local_index] = {p.elapsed_s(), late};
    });
    return times;
  }
  std::vector<AsyncTpPipeline*> peers;
  for (auto& p : pipes) peers.push_back(p.get());
  team.enqueue_barrier_all();
  for (AsyncTpPipeline* p : peers) {
    TPSIM_CUDA(cudaSetDevice(p->rank().device));
    p->begin(false);
  }
  for (int step = 0; step < AsyncTpPipeline::copy_engine_steps(team.size()); ++step) {
    for (AsyncTpPipeline* p : peers) p->enqueue_copy_engine_step(step, peers);
  }
  std::vector<bool> late(peers.size());
  for (size_t i = 0; i < peers.size(); ++i) {
    TPSIM_CUDA(cudaSetDevice(peers[i]->rank().device));
    late[i] = peers[i]->end();
  }
  for (size_t i = 0; i < peers.size(); ++i) times[i] = {peers[i]->elapsed_s(), late[i]};
  return times;
}

std::vector<IterationTime> baseline_iteration(CommTeam& team, Pipelines& pipes) {
  std::vector<IterationTime> times(pipes.size());
  team.run([&](Rank& rank) {
    AsyncTpPipeline& p = *pipes[rank.local_index];
    p.begin(true);
    p.enqueue_baseline();
    const bool late = p.end();
    times[rank.local_index] = {p.elapsed_s(), late};
  });
  return times;
}

// Runs both once on poisoned outputs and returns the largest relative difference over the ranks.
// The pipelined output stays in place while the baseline writes its own buffer.
double check_pipeline(CommTeam& team, Pipelines& pipes, const std::string& transport, uint64_t seed) {
  team.run([&](Rank& rank) {
    pipes[rank.local_index]->poison_outputs();
    TPSIM_CUDA(cudaStreamSynchronize(rank.compute));
  });
  pipelined_iteration(team, pipes, transport);  // first: the baseline would gather the shards for it
  baseline_iteration(team, pipes);
  std::vector<double> errors(pipes.size());  // the same on every rank once reduced
  team.run([&](Rank& rank) {
    AsyncTpPipeline& p = *pipes[rank.local_index];
    const double e = compare_sampled_bf16(p.baseline_output(), p.output(), p.output_elements(), seed + rank.rank);
    errors[rank.local_index] = team.worst_error_over_ranks(rank, e);
  });
  return errors.front();
}

}  // namespace

int run_async_tp_bench(const RealOptions& o, const std::vector<std::string>& arguments) {
  CommTeam team(o, arguments);
  MeasurementLog log(team.leads() ? o.json_out : "");
  TextTable table(
      {"pattern", "M", "N", "K", "transport", "chunks", "baseline us", "pipelined us", "speedup", "noise %", "check"});
  bool all_correct = true;
  for (const GemmCase& shape : o.shapes) {
    for (const std::string& pattern : o.patterns) {
      for (const std::string& transport : o.transports) {
        if (transport == "copy_engine" && !team.single_process()) {
          throw InputError("--transport copy_engine copies between GPUs of one process; run without --id-file/--mpi");
        }
        if (transport == "copy_engine" && !team.enable_peer_access()) {
          throw GpuError("--transport copy_engine needs direct peer access between every pair of GPUs");
        }
        for (int chunks : o.chunks) {
          const AsyncTpConfig config{pattern, shape, element_type(o.dtype), team.size(), chunks};
          if (const std::string why = check_async_tp(config); !why.empty()) throw InputError(why);
          Pipelines pipes(team.local_ranks().size());
          team.run(
              [&](Rank& rank) { pipes[rank.local_index] = std::make_unique<AsyncTpPipeline>(rank, config, o.seed); });
          const double error = check_pipeline(team, pipes, transport, o.seed);
          GpuStateSampler gpu_state = sample_gpu_state(team.local_devices());
          const TeamSamples baseline = sample_team(team, o.timing, [&] { return baseline_iteration(team, pipes); });
          const TeamSamples pipelined =
              sample_team(team, o.timing, [&] { return pipelined_iteration(team, pipes, transport); });
          PointContext c{
              team.gpu(), team.provenance_json(),        summarize(pipelined.slowest), 1,
              error,      within(error, kBf16Tolerance), gpu_state.finish(),           baseline.late + pipelined.late};
          all_correct = all_correct && c.correct;
          const calibrate::Measurement m =
              async_tp_point(c, shape, o.dtype, pattern, team.size(), chunks, transport, summarize(baseline.slowest));
          log.add(m);
          table.add_row({pattern, std::to_string(shape.m), std::to_string(shape.n), std::to_string(shape.k), transport,
                         std::to_string(chunks), fixed(m.baseline_s * 1e6, 1), fixed(c.timing.median * 1e6, 1),
                         fixed(m.speedup(), 3), fixed(100 * c.timing.spread(), 1), c.correct ? "ok" : "FAILED"});
        }
      }
    }
  }
  log.finish();
  if (team.leads()) print_report(o, "Async TP over " + std::to_string(team.size()) + " ranks\n" + table.str());
  return all_correct ? 0 : 1;
}

}  // namespace tpsim::real
