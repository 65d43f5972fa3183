// A routing file (moe: {routing: from_file, file: F}): the tokens each expert of each layer received, as a
// router's statistics give them, read into each layer's expert shares.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpsim::model {

// CSV with the header "layer,expert,tokens" and one row per (layer, expert): layers 0 to `layers` - 1 (the
// model's; each of the first `simulated` with some tokens), experts 0 to `experts` - 1 (an expert without a row
// received none), tokens a count >= 0 of any batch (only the shares count). Returns each layer's shares, summing
// to 1 (0 for a layer without rows). Throws InputError at file:line:col for a bad row, a repeated (layer,
// expert), a layer or expert out of range, or a simulated layer without tokens.
std::vector<std::vector<double>> read_routing_file(const std::string& path, int64_t experts, int64_t layers,
                                                   int64_t simulated);
// The same for a file's `text`, its errors located in `path`.
std::vector<std::vector<double>> parse_routing_file(const std::string& text, const std::string& path, int64_t experts,
                                                    int64_t layers, int64_t simulated);

}  // namespace tpsim::model
