// Fuzz target: the safetensors reader (header JSON, offsets, shapes, dtypes).
#include "shard/safetensors.hpp"
#include "tests/fuzz/fuzz_target.hpp"

void tpsim::fuzz::fuzz_one(std::string_view data) {
  shard::parse_safetensors(data, "fuzz.safetensors");
}
