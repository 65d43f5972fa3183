// What the calibrate fit tests share: the shipped measurement files' folder and a base profile's ring regimes.
#pragma once

#include <string>

#include "calibrate/fits/ring_fit.hpp"
#include "sim/cost/profile.hpp"

namespace tpsim::test {

inline const std::string kMeasurements = std::string(TPSIM_SOURCE_DIR) + "/calibrate/data/measurements/";

// The base profile's two ring regimes (it must have both), with no call latency yet.
inline calibrate::RingRegimes both_regimes_of(const sim::CostProfile& base) {
  calibrate::RingRegimes regimes;
  regimes.simple = base.nccl;
  regimes.small = *base.nccl_small;
  regimes.has_small = true;
  return regimes;
}

}  // namespace tpsim::test
