// The collectives a variant's passes ran, grouped by pass, kind, size and how they ran (algorithm,
// protocol, the profile section that costs them, NCCL's own choice and why it did not run where it did
// not), so that reports name what each collective actually ran.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/run/scenario_run.hpp"

namespace tpsim::sim {

struct CollectiveRun {
  std::string pass;  // the pass label ("forward", "decode step 0", ...)
  model::CollectiveKind kind = model::CollectiveKind::kAllReduce;
  double tensor_bytes = 0;
  int ranks = 0;
  CommPlan plan;      // how the first of them ran (all of a group ran alike)
  int64_t count = 0;  // collectives of the pass in the group
};

// Groups in order of first appearance; op lists' and layers' collectives alike; a TP group of one GPU's none.
std::vector<CollectiveRun> collectives_run(const std::vector<PassTrace>& passes);

}  // namespace tpsim::sim
