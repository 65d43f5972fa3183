// What the simulation produced: when each op instance (op on a rank) started and ended.
#pragma once

#include <vector>

#include "model/op.hpp"

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
};

}  // namespace tpsim::sim
