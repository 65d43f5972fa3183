// Timing statistics of real/: quantiles, summaries and the slowest-rank series.
#include <catch2/catch.hpp>
#include <stdexcept>

#include "real/core/stats.hpp"

using tpsim::real::elementwise_max;
using tpsim::real::quantile;
using tpsim::real::summarize;

TEST_CASE("quantiles interpolate linearly between order statistics", "[real][stats]") {
  const std::vector<double> shuffled = {7, 3, 10, 1, 5, 9, 2, 8, 4, 6};
  // Position q (n - 1) in the sorted 1..10: 0.1 x 9 = 0.9 -> 1 + 0.9; 0.5 x 9 = 4.5 -> 5.5; 0.9 x 9 = 8.1 -> 9.1.
  CHECK(quantile(shuffled, 0.1) == Approx(1.9));
  CHECK(quantile(shuffled, 0.5) == Approx(5.5));
  CHECK(quantile(shuffled, 0.9) == Approx(9.1));
  CHECK(quantile(shuffled, 0.0) == 1);
  CHECK(quantile(shuffled, 1.0) == 10);
}

TEST_CASE("a summary reports median, p10, p90, extremes, mean and the relative spread", "[real][stats]") {
  const tpsim::real::Summary s = summarize({2e-6, 4e-6, 3e-6, 5e-6, 1e-6});
  CHECK(s.samples == 5);
  CHECK(s.median == Approx(3e-6));
  CHECK(s.p10 == Approx(1e-6 + 0.4 * 1e-6));  // position 0.4 between 1 and 2 us
  CHECK(s.p90 == Approx(4e-6 + 0.6 * 1e-6));  // position 3.6 between 4 and 5 us
  CHECK(s.min == 1e-6);
  CHECK(s.max == 5e-6);
  CHECK(s.mean == Approx(3e-6));
  CHECK(s.spread() == Approx((4.6e-6 - 1.4e-6) / 3e-6));
}

TEST_CASE("one sample is its own median and percentiles, and no samples is an error", "[real][stats]") {
  const tpsim::real::Summary s = summarize({42.0});
  CHECK(s.median == 42.0);
  CHECK(s.p10 == 42.0);
  CHECK(s.p90 == 42.0);
  CHECK(s.spread() == 0.0);
  CHECK_THROWS_AS(summarize({}), std::invalid_argument);
}

TEST_CASE("the slowest rank decides each sample of a multi-rank measurement", "[real][stats]") {
  CHECK(elementwise_max({{1, 5, 3}, {2, 4, 6}}) == std::vector<double>{2, 5, 6});
  CHECK_THROWS_AS(elementwise_max({{1, 2}, {1}}), std::invalid_argument);
}
