// Fuzz target: the MoE routing-file reader (moe: {routing: from_file}), for a Qwen3-30B-A3B-shaped model (128
// experts, 48 layers, the first 4 simulated); tests/fuzz/seeds/routing holds routing files of it.
#include "input/moe_routing_file.hpp"
#include "tests/fuzz/fuzz_target.hpp"

void tpsim::fuzz::fuzz_one(std::string_view data) {
  model::parse_routing_file(std::string(data), "routing.csv", 128, 48, 4);
}
