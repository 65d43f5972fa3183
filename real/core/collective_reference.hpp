// What each rank's output of a collective must hold, computed on the host from the same generator the
// inputs were filled with: rank r's send buffer holds uniform_value(seed, r * send_count + j), rounded
// to the element type.
#pragma once

#include <cstdint>

#include "real/core/collective.hpp"
#include "real/core/element_type.hpp"

namespace tpsim::real {

struct CollectiveCall {
  Collective collective = Collective::kAllReduce;
  ElementType type = ElementType::kFloat32;
  ElementCounts counts;  // per rank
  int rank = 0;
  int ranks = 2;
};

// Input element j of `rank`.
double collective_input(const CollectiveCall& call, uint64_t seed, int rank, int64_t j);
// What output element i of call.rank must hold (sums in float64).
double collective_expected(const CollectiveCall& call, uint64_t seed, int64_t i);

}  // namespace tpsim::real
