// Checked size products (__builtin_mul_overflow) and the GEMM shape bound.
#include "base/size_checks.hpp"

#include "base/limits.hpp"

namespace tpsim::model {

std::optional<int64_t> checked_product(std::initializer_list<int64_t> factors, int64_t limit) {
  int64_t product = 1;
  for (const int64_t factor : factors) {
    if (factor < 0 || __builtin_mul_overflow(product, factor, &product) || product > limit) return std::nullopt;
  }
  return product;
}

std::string gemm_shape_problem(int64_t m, int64_t n, int64_t k) {
  if (m < 1 || n < 1 || k < 1) return "GEMM dimensions must be positive integers";
  constexpr auto kMaxElements = static_cast<int64_t>(kMaxSimulatedBytes / 2);
  if (!checked_product({m, k}, kMaxElements) || !checked_product({k, n}, kMaxElements) ||
      !checked_product({m, n}, kMaxElements)) {
    return "a GEMM of " + std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(k) +
           " has an operand or output over the largest size tpsim simulates, 1 PiB";
  }
  return "";
}

}  // namespace tpsim::model
