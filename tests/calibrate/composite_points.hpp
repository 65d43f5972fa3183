// A composite measurement of the given kind and shape for validate's tests (times filled in by each test).
#pragma once

#include <string>

#include "base/measurement.hpp"

namespace tpsim::test {

inline calibrate::Measurement composite(const std::string& kind, const std::string& pattern, int64_t m, int64_t n,
                                        int64_t k, int ranks) {
  calibrate::Measurement x;
  x.kind = kind;
  x.gpu = "h100-sxm";
  x.pattern = pattern;
  x.m = m;
  x.n = n;
  x.k = k;
  x.ranks = ranks;
  x.origin = kind + "/" + pattern;
  return x;
}

}  // namespace tpsim::test
