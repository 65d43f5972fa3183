// What the simulation produced: when each op instance (op on a rank) started and ended, and how each
// communication op ran (its plan: algorithm, protocol, steps), so that reports never re-derive it.
#pragma once

#include <memory>
#include <vector>

#include "model/graph/op.hpp"
#include "sim/engine/comm_plan.hpp"

namespace tpsim::sim {

struct OpSpan {
  model::OpId op = 0;
  int rank = 0;
  double start_s = 0;
  double end_s = 0;
};

struct Timeline {
  int ranks = 0;
  std::vector<OpSpan> spans;  // ordered by (op, rank)
  double makespan_s = 0;
  // The SM clock its compute-bound kernels ran at, relative to the profile's (sim/engine/runner/window_clock.hpp).
  double clock_ratio = 1;
  // The plan the engine ran for each op, indexed by op id (a default plan for kernels); null for a
  // timeline made without an engine.
  std::shared_ptr<const std::vector<CommPlan>> plans;
};

}  // namespace tpsim::sim
