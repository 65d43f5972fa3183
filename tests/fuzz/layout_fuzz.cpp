// Fuzz target: the layout reader of `tpsim shard apply`, checked against a small model (2 layers, 4 KV
// groups, 8 FFN neurons; tests/fuzz/seeds/layout holds layouts of it).
#include "shard/apply_layout.hpp"
#include "tests/fuzz/fuzz_target.hpp"

void tpsim::fuzz::fuzz_one(std::string_view data) {
  model::ArchSpec arch;
  arch.layers = 2;
  arch.kv_heads = 4;
  arch.heads = 8;
  arch.intermediate = 8;
  shard::parse_layout_json(std::string(data), "layout.json", arch);
}
