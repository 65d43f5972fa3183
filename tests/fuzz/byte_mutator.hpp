// A small deterministic mutator for GCC builds without libFuzzer: byte flips, deletions, duplications,
// and tokens that break readers (huge, non-finite and fractional numbers, bad UTF-8, YAML and JSON syntax).
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace tpsim::fuzz {

class ByteMutator {
 public:
  explicit ByteMutator(uint64_t seed) : random_(seed) {}
  // `input` with one to four random edits.
  std::string mutate(std::string input);

 private:
  size_t below(size_t end) { return end == 0 ? 0 : std::uniform_int_distribution<size_t>(0, end - 1)(random_); }
  void edit(std::string& text);

  std::mt19937_64 random_;
};

}  // namespace tpsim::fuzz
