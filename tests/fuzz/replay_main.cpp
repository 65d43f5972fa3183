// Without libFuzzer (a GCC build): runs a fuzz target once over every file of the given files and
// folders (the seed corpora, or a crash input to reproduce), then over `--mutations N` deterministic
// mutations of them (ByteMutator), as `target [--mutations N] FILE|DIR...`. A finding aborts the process.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/byte_mutator.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void run_one(const std::string& bytes) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
  size_t mutations = 0;
  std::vector<std::string> seeds;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--mutations") == 0 && i + 1 < argc) {
      mutations = std::stoul(argv[++i]);
      continue;
    }
    const std::filesystem::path root(argv[i]);
    if (std::filesystem::is_regular_file(root)) {
      seeds.push_back(read_bytes(root));
      continue;
    }
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
      if (entry.is_regular_file()) seeds.push_back(read_bytes(entry.path()));
    }
  }
  for (const std::string& seed : seeds) run_one(seed);
  tpsim::fuzz::ByteMutator mutator(20);
  for (size_t i = 0; i < mutations && !seeds.empty(); ++i) run_one(mutator.mutate(seeds[i % seeds.size()]));
  std::printf("replayed %zu seeds and %zu mutations of them without a finding\n", seeds.size(), mutations);
  return seeds.empty() ? 1 : 0;
}
