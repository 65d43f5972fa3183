// Rank skew's deterministic log-normal factors (its reader: input/section_readers.cpp).
#include "model/parallel/rank_skew.hpp"

#include "base/splitmix.hpp"

#include <cmath>

namespace tpsim::model {
namespace {

// A uniform in (0, 1] from the top 53 bits.
double uniform(uint64_t bits) {
  constexpr double kScale = 1.0 / 9007199254740992.0;
  return (static_cast<double>(bits >> 11U) + 1.0) * kScale;
}

// A standard normal from two draws of `key` (Box-Muller).
double standard_normal(uint64_t key) {
  const double u1 = uniform(splitmix64(key));
  const double u2 = uniform(splitmix64(key ^ 0x5bd1e9955bd1e995ULL));
  constexpr double kTwoPi = 6.283185307179586;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

// exp(sigma z - sigma^2 / 2) with sigma^2 = ln(1 + cv^2): mean 1, coefficient of variation cv.
double lognormal_factor(double cv, uint64_t key) {
  if (cv <= 0) return 1.0;
  const double variance = std::log1p(cv * cv);
  return std::exp(std::sqrt(variance) * standard_normal(key) - variance / 2);
}

}  // namespace

double skew_factor(const RankSkew& skew, uint64_t op, int rank) {
  if (!skew.enabled()) return 1.0;
  const uint64_t gpu_key = splitmix64(skew.seed ^ splitmix64(static_cast<uint64_t>(rank) + 1));
  const uint64_t kernel_key = splitmix64(gpu_key ^ splitmix64(op + 0x100000000ULL));
  return lognormal_factor(skew.gpu_cv, gpu_key) * lognormal_factor(skew.kernel_cv, kernel_key);
}

}  // namespace tpsim::model
