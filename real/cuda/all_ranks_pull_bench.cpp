// tpsim-real memcpy --path peer_all_ranks: every GPU of the process pulls a shard from each other GPU in turn, all
// at once, as symmetric-memory async TP's all-gather does (rank r pulls from r + 1, r + 2, ... with
// cudaMemcpyPeerAsync on its copy stream, back to back). A sample is the slowest rank's round, queued behind a
// barrier and a spin; a point's time is one pull's (the round over its n - 1 pulls), what `tpsim calibrate` fits
// copy_engine.all_ranks_link_efficiency on.
#include <memory>

#include "base/input_error.hpp"
#include "real/core/measurement_log.hpp"
#include "real/core/points.hpp"
#include "real/core/text_table.hpp"
#include "real/cuda/benches.hpp"
#include "real/cuda/comm_team.hpp"
#include "real/cuda/copy_check.hpp"
#include "real/cuda/cuda_check.hpp"
#include "real/cuda/device_info.hpp"
#include "real/cuda/kernels.hpp"
#include "real/cuda/queued_region.hpp"
#include "real/cuda/team_samples.hpp"

namespace tpsim::real {
namespace {

// One rank's shard (what the others pull), its n - 1 slots (what it pulls) and its timed region.
struct PullRank {
  PullRank(Rank& rank, int ranks, size_t bytes)
      : rank(rank), shard(rank.device, bytes), slots(rank.device, bytes * static_cast<size_t>(ranks - 1)) {
    TPSIM_CUDA(cudaSetDevice(rank.device));
    region = std::make_unique<QueuedRegion>(rank.compute, std::vector<cudaStream_t>{rank.copy});
  }
  void* slot(int step, size_t bytes) const { return slots.at(static_cast<size_t>(step - 1) * bytes); }

  Rank& rank;
  DeviceBuffer shard, slots;
  std::unique_ptr<QueuedRegion> region;
};

using PullRanks = std::vector<std::unique_ptr<PullRank>>;

// One round on every rank, queued from this thread behind one barrier: step s of every rank before step s + 1 of
// any, so that all ranks pull at once.
std::vector<IterationTime> pull_round(CommTeam& team, PullRanks& ranks, size_t bytes) {
  const int n = team.size();
  team.enqueue_barrier_all();
  for (auto& p : ranks) {
    TPSIM_CUDA(cudaSetDevice(p->rank.device));
    p->region->begin();
  }
  for (int step = 1; step < n; ++step) {
    for (auto& p : ranks) {
      const PullRank& owner = *ranks[static_cast<size_t>(wrap_rank(p->rank.rank + step, n))];
      TPSIM_CUDA(cudaSetDevice(p->rank.device));
      TPSIM_CUDA(cudaMemcpyPeerAsync(p->slot(step, bytes), p->rank.device, owner.shard.get(), owner.rank.device, bytes,
                                     p->rank.copy));
    }
  }
  std::vector<IterationTime> times(ranks.size());
  std::vector<bool> late(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    TPSIM_CUDA(cudaSetDevice(ranks[i]->rank.device));
    late[i] = ranks[i]->region->end();
  }
  for (size_t i = 0; i < ranks.size(); ++i) times[i] = {ranks[i]->region->seconds(), late[i]};
  return times;
}

// Fills every shard, runs one round into poisoned slots and checks that each slot holds its owner's shard.
bool check_round(CommTeam& team, PullRanks& ranks, size_t bytes, uint64_t seed) {
  for (auto& p : ranks) {
    TPSIM_CUDA(cudaSetDevice(p->rank.device));
    fill_uniform(p->shard.get(), ElementType::kFp8E4m3, static_cast<int64_t>(bytes), seed + p->rank.rank, 0,
                 p->rank.compute);
    TPSIM_CUDA(cudaMemsetAsync(p->slots.get(), 0xFF, p->slots.bytes(), p->rank.compute));
    TPSIM_CUDA(cudaStreamSynchronize(p->rank.compute));
  }
  pull_round(team, ranks, bytes);
  bool correct = true;
  for (auto& p : ranks) {
    TPSIM_CUDA(cudaSetDevice(p->rank.device));
    TPSIM_CUDA(cudaStreamSynchronize(p->rank.compute));
    for (int step = 1; step < team.size(); ++step) {
      const PullRank& owner = *ranks[static_cast<size_t>(wrap_rank(p->rank.rank + step, team.size()))];
      correct = correct && copy_arrived(owner.shard.get(), p->slot(step, bytes), bytes);
    }
  }
  return correct;
}

}  // namespace

int run_all_ranks_pull_bench(const RealOptions& o, const std::vector<std::string>& arguments) {
  CommTeam team(o, arguments);
  if (!team.single_process()) {
    throw InputError("--path peer_all_ranks copies between GPUs of one process; run without --id-file/--mpi");
  }
  if (!team.enable_peer_access()) throw GpuError("--path peer_all_ranks needs direct peer access between all GPUs");
  MeasurementLog log(o.json_out);
  TextTable table({"ranks", "bytes per pull", "round us", "us per pull", "GB/s per pull", "noise %", "check"});
  bool all_correct = true;
  const int n = team.size();
  for (int64_t size : o.sizes.resolve(1)) {
    const auto bytes = static_cast<size_t>(size);
    PullRanks ranks;
    for (auto& rank : team.local_ranks()) ranks.push_back(std::make_unique<PullRank>(*rank, n, bytes));
    const bool correct = check_round(team, ranks, bytes, o.seed);
    all_correct = all_correct && correct;
    GpuStateSampler gpu_state = sample_gpu_state(team.local_devices());
    const TeamSamples rounds = sample_team(team, o.timing, [&] { return pull_round(team, ranks, bytes); });
    std::vector<double> per_pull = rounds.slowest;
    for (double& s : per_pull) s /= n - 1;
    PointContext c{team.gpu(), team.provenance_json(), summarize(per_pull), 1, correct ? 0.0 : 1.0,
                   correct,    gpu_state.finish(),     rounds.late};
    calibrate::Measurement m = memcpy_point(c, "peer_all_ranks", size);
    m.ranks = n;
    m.details["pulls_per_round"] = n - 1;
    m.details["round_s"] = summarize(rounds.slowest).median;
    log.add(m);
    table.add_row({std::to_string(n), std::to_string(size), fixed(m.details["round_s"].get<double>() * 1e6, 1),
                   fixed(c.timing.median * 1e6, 1), fixed(m.algbw_GBps(), 1), fixed(100 * c.timing.spread(), 1),
                   correct ? "ok" : "FAILED"});
  }
  log.finish();
  print_report(o, "Pulls while all " + std::to_string(n) + " GPUs pull at once\n" + table.str());
  return all_correct ? 0 : 1;
}

}  // namespace tpsim::real
