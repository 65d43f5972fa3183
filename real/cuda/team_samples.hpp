// Samples of a multi-rank measurement: each sample is one queued iteration on every rank, and its time
// is the slowest rank's (a pipeline ends when its last rank does).
#pragma once

#include <functional>
#include <vector>

#include "real/core/options.hpp"
#include "real/cuda/comm_team.hpp"

namespace tpsim::real {

// One rank's iteration: its time, and whether the GPU reached its start before the host had queued it.
struct IterationTime {
  double seconds = 0;
  bool late = false;
};

struct TeamSamples {
  std::vector<double> slowest;  // per timed sample, over all ranks
  int late = 0;                 // timed samples that were late on some rank
};

// Runs timing.warmup untimed iterations, then timing.samples timed ones; `iteration` runs one on every
// local rank and returns each local rank's outcome.
TeamSamples sample_team(CommTeam& team, const TimingOptions& timing,
                        const std::function<std::vector<IterationTime>()>& iteration);

}  // namespace tpsim::real
