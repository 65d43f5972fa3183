// Fuzz target: the Hugging Face config.json reader.
#include "input/model/hf_config.hpp"
#include "tests/fuzz/fuzz_target.hpp"

void tpsim::fuzz::fuzz_one(std::string_view data) {
  model::parse_hf_config(data, "config.json", "fuzz");
}
