// The exact balanced assignment against brute force, and its special cases.
#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <numeric>
#include <random>

#include "shard/balanced_assignment.hpp"

using tpsim::shard::assignment_gain;
using tpsim::shard::balanced_assignment;

namespace {

// The best gain over every balanced assignment, by enumeration.
double brute_force(const std::vector<double>& gain, int items, int devices) {
  const int capacity = items / devices;
  std::vector<int> count(static_cast<size_t>(devices), 0), device_of(static_cast<size_t>(items), 0);
  double best = -1e300;
  std::function<void(int, double)> place = [&](int item, double total) {
    if (item == items) {
      best = std::max(best, total);
      return;
    }
    for (int d = 0; d < devices; ++d) {
      if (count[static_cast<size_t>(d)] == capacity) continue;
      ++count[static_cast<size_t>(d)];
      place(item + 1, total + gain[static_cast<size_t>(item * devices + d)]);
      --count[static_cast<size_t>(d)];
    }
  };
  place(0, 0);
  return best;
}

std::vector<double> random_gain(int items, int devices, uint64_t seed, bool integers) {
  std::mt19937_64 engine(seed);
  std::vector<double> gain(static_cast<size_t>(items * devices));
  for (double& g : gain)
    g = integers ? static_cast<double>(engine() % 4) : std::uniform_real_distribution<>(-1, 1)(engine);
  return gain;
}

}  // namespace

TEST_CASE("the balanced assignment equals brute force for 2, 3 and 4 devices, ties included") {
  for (const auto& [items, devices] :
       std::vector<std::pair<int, int>>{{8, 2}, {12, 2}, {9, 3}, {12, 3}, {8, 4}, {12, 4}}) {
    for (uint64_t seed = 1; seed <= 25; ++seed) {
      for (bool integers : {false, true}) {
        const std::vector<double> gain = random_gain(items, devices, seed * 31 + items, integers);
        const std::vector<int> device_of = balanced_assignment(gain, items, devices);
        INFO(items << " items, " << devices << " devices, seed " << seed << (integers ? ", integer gains" : ""));
        CHECK(assignment_gain(gain, device_of, devices) == Approx(brute_force(gain, items, devices)).margin(1e-9));
        for (int d = 0; d < devices; ++d) CHECK(std::count(device_of.begin(), device_of.end(), d) == items / devices);
      }
    }
  }
}

TEST_CASE("with two devices the balanced assignment is a sort by the gain difference") {
  const int items = 1000;
  const std::vector<double> gain = random_gain(items, 2, 7, false);
  std::vector<int> order(items);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return gain[2 * a] - gain[2 * a + 1] > gain[2 * b] - gain[2 * b + 1]; });
  std::vector<int> sorted(items, 1);
  for (int i = 0; i < items / 2; ++i) sorted[order[i]] = 0;
  CHECK(assignment_gain(gain, balanced_assignment(gain, items, 2), 2) == Approx(assignment_gain(gain, sorted, 2)));
}

TEST_CASE("one item per device is a plain assignment, and sizes that do not divide are refused") {
  // A permutation problem: the diagonal is worth 10, everything else 1.
  std::vector<double> gain(16, 1.0);
  for (int i = 0; i < 4; ++i) gain[static_cast<size_t>(i * 4 + (3 - i))] = 10;
  CHECK(balanced_assignment(gain, 4, 4) == std::vector<int>{3, 2, 1, 0});
  CHECK_THROWS_AS(balanced_assignment(std::vector<double>(10, 0.0), 5, 2), std::invalid_argument);
}
