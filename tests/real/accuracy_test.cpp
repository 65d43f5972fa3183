// Test data and correctness checks of real/: the generator, the bf16 / fp8 codecs, relative errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "real/core/accuracy.hpp"
#include "real/core/random_values.hpp"

using namespace tpsim::real;

TEST_CASE("generated values are in (-1, 1), never zero, reproducible, and centred", "[real][accuracy]") {
  double sum = 0;
  const int count = 100000;
  for (int i = 0; i < count; ++i) {
    const float v = uniform_value(11, static_cast<uint64_t>(i));
    REQUIRE(v > -1.0f);
    REQUIRE(v < 1.0f);
    REQUIRE(v != 0.0f);
    sum += v;
  }
  // Mean of U(-1, 1): 0, standard error sqrt(1/3 / n) = 0.0018; 5 sigma.
  CHECK(std::abs(sum / count) < 5 * std::sqrt(1.0 / 3 / count));
  CHECK(uniform_value(11, 5) == uniform_value(11, 5));
  CHECK(uniform_value(11, 5) != uniform_value(12, 5));
}

TEST_CASE("bf16 rounding is to nearest, ties to even", "[real][accuracy]") {
  CHECK(bf16_bits(1.0f) == 0x3F80);
  CHECK(bf16_value(0x3F80) == 1.0f);
  // bf16 keeps 7 mantissa bits: 1 + 2^-8 is halfway between 1 and 1 + 2^-7 and goes to the even 1.
  CHECK(bf16_bits(1.0f + 0x1p-8f) == 0x3F80);
  // 1 + 3 x 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  CHECK(bf16_bits(1.0f + 3 * 0x1p-8f) == 0x3F82);
  CHECK(bf16_bits(-2.0f) == 0xC000);
  CHECK(std::isnan(bf16_value(bf16_bits(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_CASE("fp8 e4m3 decodes normals, subnormals, the largest value and NaN", "[real][accuracy]") {
  CHECK(fp8_e4m3_value(0x38) == 1.0f);                  // exponent 7 = bias, mantissa 0
  CHECK(fp8_e4m3_value(0xB8) == -1.0f);                 // sign bit
  CHECK(fp8_e4m3_value(0x7E) == 448.0f);                // 1.75 x 2^8, the largest finite
  CHECK(fp8_e4m3_value(0x01) == std::ldexp(1.0f, -9));  // smallest subnormal: 1/8 x 2^-6
  CHECK(std::isnan(fp8_e4m3_value(0x7F)));
}

TEST_CASE("relative error is the norm of the difference over the norm of the reference", "[real][accuracy]") {
  CHECK(relative_error({3, 4}, {3, 4}) == 0.0);
  // diff (0, 1) over norm 5.
  CHECK(relative_error({3, 4}, {3, 5}) == Approx(0.2));
  CHECK(std::isnan(relative_error({1, 2}, {1, std::nan("")})));
  CHECK(std::isnan(relative_error({1, 2}, {1})));
  CHECK_FALSE(within(std::nan(""), 1.0));
  CHECK(within(0.005, kBf16Tolerance));
  CHECK_FALSE(within(0.02, kBf16Tolerance));
}

TEST_CASE("sampled GEMM outputs are checked against float64 dot products", "[real][accuracy]") {
  SampledEntry exact{{1, 2, 3}, {4, 5, 6}, 32};  // 4 + 10 + 18
  SampledEntry other{{1, 1}, {1, -3}, -2};
  CHECK(sampled_gemm_error({exact, other}) == 0.0);
  other.y = -1;  // error 1 over the norm sqrt(32^2 + 2^2)
  CHECK(sampled_gemm_error({exact, other}) == Approx(1 / std::sqrt(32.0 * 32 + 4)));
}

TEST_CASE("sample positions include the corners and stay inside the matrix", "[real][accuracy]") {
  const auto positions = sample_positions(100, 7, 64, 3);
  REQUIRE(positions.size() == 64);
  CHECK(positions[0] == std::pair<int64_t, int64_t>{0, 0});
  CHECK(positions[3] == std::pair<int64_t, int64_t>{99, 6});
  for (const auto& [row, column] : positions) {
    CHECK(row >= 0);
    CHECK(row < 100);
    CHECK(column >= 0);
    CHECK(column < 7);
  }
}
