// The exact balanced assignment at the heart of the layout optimiser: give each of n items one of D
// devices, n / D items per device, maximising the total gain gain[item][device]. A transportation
// problem; solved exactly by successive longest augmenting paths (the Hungarian method with the D
// devices' capacity slots merged): items are added one at a time, each along the best path that
// places it and moves a chain of already placed items between devices, found by Bellman-Ford over
// the D devices with, per device pair, a heap of the best item to move. The partial assignment stays
// optimal for the items placed so far, so the last one is optimal. O(n (D^3 + D^2 log n)).
#pragma once

#include <vector>

namespace tpsim::shard {

// gain: n rows of D values (row-major, gain[item * D + device]). n must be a multiple of D.
// Returns the device of each item. Throws std::invalid_argument on a size mismatch.
std::vector<int> balanced_assignment(const std::vector<double>& gain, int items, int devices);

// Total gain of an assignment.
double assignment_gain(const std::vector<double>& gain, const std::vector<int>& device_of, int devices);

}  // namespace tpsim::shard
