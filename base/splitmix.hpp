// SplitMix64's finaliser (Steele, Lea and Flood 2014): a well-mixed 64-bit value from any counter, the same on
// every machine. The seeded draws (rank skew, MoE routing) derive their keys with it.
#pragma once

#include <cstdint>

namespace tpsim::model {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27U)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31U);
}

}  // namespace tpsim::model
