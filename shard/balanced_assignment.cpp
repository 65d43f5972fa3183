// Successive longest augmenting paths over the device graph.
#include "shard/balanced_assignment.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace tpsim::shard {
namespace {

// Moving an item from device a to device b changes the total by gain[b] - gain[a]: the heap of pair
// (a, b) keeps the items on a by that change, stale entries (items moved since) skipped on reading.
class MoveHeaps {
 public:
  MoveHeaps(const std::vector<double>& gain, const std::vector<int>& device_of, int devices)
      : gain_(gain), device_of_(device_of), devices_(devices), heaps_(static_cast<size_t>(devices * devices)) {}

  void add(int item) {
    const int a = device_of_[static_cast<size_t>(item)];
    for (int b = 0; b < devices_; ++b) {
      if (b != a) heap(a, b).emplace(change(item, a, b), item);
    }
  }
  // The best item to move from a to b (-1 if none) and the change it brings.
  std::pair<int, double> best(int a, int b) {
    auto& h = heap(a, b);
    while (!h.empty() && device_of_[static_cast<size_t>(h.top().second)] != a) h.pop();
    if (h.empty()) return {-1, 0};
    return {h.top().second, h.top().first};
  }

 private:
  using Heap = std::priority_queue<std::pair<double, int>>;
  Heap& heap(int a, int b) { return heaps_[static_cast<size_t>(a * devices_ + b)]; }
  double change(int item, int a, int b) const {
    const size_t row = static_cast<size_t>(item) * static_cast<size_t>(devices_);
    return gain_[row + static_cast<size_t>(b)] - gain_[row + static_cast<size_t>(a)];
  }

  const std::vector<double>& gain_;
  const std::vector<int>& device_of_;
  int devices_;
  std::vector<Heap> heaps_;
};

}  // namespace

std::vector<int> balanced_assignment(const std::vector<double>& gain, int items, int devices) {
  if (devices < 1 || items < 0 || items % devices != 0 ||
      gain.size() != static_cast<size_t>(items) * static_cast<size_t>(devices)) {
    throw std::invalid_argument("balanced_assignment: needs items divisible by devices and items x devices gains");
  }
  const int capacity = items / devices;
  std::vector<int> device_of(static_cast<size_t>(items), -1);
  std::vector<int> count(static_cast<size_t>(devices), 0);
  MoveHeaps moves(gain, device_of, devices);
  constexpr double kNone = -std::numeric_limits<double>::infinity();
  const auto D = static_cast<size_t>(devices);
  std::vector<double> best(D), change(D * D);
  std::vector<int> from(D), moved(D), mover(D * D);
  std::vector<char> changed(D), next(D);
  for (int x = 0; x < items; ++x) {
    // Longest path: x placed on some device, then a chain of moves, ending on a device with room.
    // The best move of each device pair cannot change while the path is searched: read them once.
    for (size_t a = 0; a < D; ++a) {
      for (size_t b = 0; b < D; ++b) {
        if (a == b) continue;
        std::tie(mover[a * D + b], change[a * D + b]) = moves.best(static_cast<int>(a), static_cast<int>(b));
      }
    }
    const size_t row = static_cast<size_t>(x) * D;
    for (size_t d = 0; d < D; ++d) best[d] = gain[row + d];
    std::fill(from.begin(), from.end(), -1);
    std::fill(changed.begin(), changed.end(), 1);
    // Bellman-Ford rounds, relaxing only from the devices whose value changed in the round before.
    for (int round = 1; round < devices; ++round) {
      bool any = false;
      std::fill(next.begin(), next.end(), 0);
      for (size_t a = 0; a < D; ++a) {
        if (!changed[a] || best[a] == kNone) continue;
        for (size_t b = 0; b < D; ++b) {
          if (a == b || mover[a * D + b] < 0) continue;
          const double value = best[a] + change[a * D + b];
          // Strictly better beyond rounding (a few ulps of the value): ties never loop the path.
          if (value > best[b] + 1e-15 * (1 + std::abs(value))) {
            best[b] = value;
            from[b] = static_cast<int>(a);
            moved[b] = mover[a * D + b];
            next[b] = 1;
            any = true;
          }
        }
      }
      if (!any) break;
      changed.swap(next);
    }
    int end = -1;
    for (int d = 0; d < devices; ++d) {
      if (count[static_cast<size_t>(d)] < capacity &&
          (end < 0 || best[static_cast<size_t>(d)] > best[static_cast<size_t>(end)])) {
        end = d;
      }
    }
    // Walk the path back: each step's item moves onto the device after it.
    ++count[static_cast<size_t>(end)];
    std::vector<std::pair<int, int>> placements;  // item, device
    int d = end;
    for (int guard = 0; from[static_cast<size_t>(d)] >= 0 && guard < devices; ++guard) {
      placements.emplace_back(moved[static_cast<size_t>(d)], d);
      d = from[static_cast<size_t>(d)];
    }
    placements.emplace_back(x, d);
    for (const auto& [item, device] : placements) device_of[static_cast<size_t>(item)] = device;
    for (const auto& [item, device] : placements) moves.add(item);
  }
  return device_of;
}

double assignment_gain(const std::vector<double>& gain, const std::vector<int>& device_of, int devices) {
  double total = 0;
  for (size_t i = 0; i < device_of.size(); ++i)
    total += gain[i * static_cast<size_t>(devices) + static_cast<size_t>(device_of[i])];
  return total;
}

}  // namespace tpsim::shard
