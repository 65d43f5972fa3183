// Products of sizes with overflow checks: a count or a byte size past int64, or past the largest size
// tpsim simulates, is refused instead of wrapping into negative times.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

namespace tpsim::model {

// The product of non-negative factors, or nullopt when it passes `limit` (or int64) on the way.
std::optional<int64_t> checked_product(std::initializer_list<int64_t> factors, int64_t limit = INT64_MAX);

// Why a GEMM of m x n x k (2-byte elements) cannot be simulated: a dimension under 1, or an operand or
// the output over kMaxSimulatedBytes; empty when it can.
std::string gemm_shape_problem(int64_t m, int64_t n, int64_t k);

}  // namespace tpsim::model
