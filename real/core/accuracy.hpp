// Correctness checks of device results against float64 references on the host, in the norm-wise
// relative error ||out - ref|| / ||ref|| (NaN never passes), with the tolerances each precision earns.
#pragma once

#include <cstdint>
#include <vector>

namespace tpsim::real {

// ||got - ref||_2 / ||ref||_2; NaN when any value is NaN or the sizes differ; 0 for two empty vectors.
double relative_error(const std::vector<double>& ref, const std::vector<double>& got);

// Passes when the error is a number at or under the tolerance.
bool within(double relative_error, double tolerance);

// bf16 (or fp8) operands with float accumulation and a bf16 output: rounding the output alone costs
// up to 2^-9 relative per element, so 1e-2 leaves room for accumulation order without hiding a bug
// (METHOD.md: bf16 operands land between 1e-3 and 1e-2).
inline constexpr double kBf16Tolerance = 1e-2;
// float32 collectives: n-term sums in another order than the float64 reference, each addition off by
// at most 2^-24 relative, so under (n - 1) 2^-24 = 4.2e-7 for 8 ranks; 1e-5 holds up to ~160 ranks.
inline constexpr double kFloat32Tolerance = 1e-5;

// One sampled output element of Y = X W^T: the row of X, the row of W, and what the device wrote.
struct SampledEntry {
  std::vector<float> x_row;
  std::vector<float> w_row;
  float y = 0;
};

// Positions (row, column) to sample in an m x n output: `count` deterministic positions, always
// including the four corners (where wrong strides show first).
std::vector<std::pair<int64_t, int64_t>> sample_positions(int64_t m, int64_t n, int count, uint64_t seed);

// The relative error of the sampled outputs against float64 dot products.
double sampled_gemm_error(const std::vector<SampledEntry>& entries);

}  // namespace tpsim::real
