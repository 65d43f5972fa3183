// Per-rank series reduced to the slowest rank, within and across processes.
#include "real/cuda/team_samples.hpp"

#include <algorithm>

#include "real/core/stats.hpp"

namespace tpsim::real {

TeamSamples sample_team(CommTeam& team, const TimingOptions& timing,
                        const std::function<std::vector<IterationTime>()>& iteration) {
  std::vector<std::vector<double>> per_rank(team.local_ranks().size());
  std::vector<double> late(static_cast<size_t>(std::max(0, timing.samples)), 0.0);
  for (int s = -timing.warmup; s < timing.samples; ++s) {
    const std::vector<IterationTime> times = iteration();
    if (s < 0) continue;
    for (size_t i = 0; i < times.size(); ++i) {
      per_rank[i].push_back(times[i].seconds);
      if (times[i].late) late[static_cast<size_t>(s)] = 1;
    }
  }
  TeamSamples out{elementwise_max(per_rank), 0};
  if (!team.single_process()) {
    team.run([&](Rank& rank) {
      out.slowest = team.max_over_ranks(rank, out.slowest);
      late = team.max_over_ranks(rank, late);
    });
  }
  out.late = static_cast<int>(std::count(late.begin(), late.end(), 1.0));
  return out;
}

}  // namespace tpsim::real
