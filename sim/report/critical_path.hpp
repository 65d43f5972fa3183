// The chain of ops and waits that decides a pass's time: from the start to the last op to finish, through
// the dependencies (program order, streams, peers' steps), the path whose unexplained waiting (time an op
// starts after every dependency on the path has ended: host launches, GPU-side waits) is least. Found
// as a shortest path over the op instances' DAG with Boost.Graph; each link's share of the pass time.
#pragma once

#include <string>
#include <vector>

#include "sim/run/scenario_run.hpp"

namespace tpsim::sim {

struct PathLink {
  std::string op;    // the op's name; empty for a wait
  std::string kind;  // gemm, attention, memory, collective, exchange, or wait
  int rank = 0;
  double start_s = 0;
  double end_s = 0;
  double share = 0;  // of the pass time
};

// From time 0 to the pass's last end: ops and the waits between them, in time order; their durations
// add up to the pass time.
std::vector<PathLink> critical_path(const PassTrace& pass);

// Per kind (gemm, attention, memory, collective, exchange; a pipeline step's forward, backward, weight gradient, send
// and optimizer; wait): the share of the pass time, kinds in that order.
std::vector<std::pair<std::string, double>> critical_path_by_kind(const std::vector<PathLink>& path);

// The ops of the path grouped by name without their layer ("L3.ffn.down_proj" -> "ffn.down_proj"), with
// their count and share, largest first; at most `top` of them.
struct PathGroup {
  std::string name;
  int count = 0;
  double share = 0;
};
std::vector<PathGroup> critical_path_groups(const std::vector<PathLink>& path, size_t top);

}  // namespace tpsim::sim
