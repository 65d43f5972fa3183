// ByteMutator: edits chosen by a seeded generator, so a GCC test run is the same every time.
#include "tests/fuzz/byte_mutator.hpp"

#include <array>
#include <string_view>

namespace tpsim::fuzz {
namespace {

// Tokens the hardening issue's reproducers are made of.
constexpr std::array<std::string_view, 30> kTokens = {"0",
                                                      "-1",
                                                      "0.5",
                                                      "1e308",
                                                      "1e309",
                                                      "-1e309",
                                                      ".nan",
                                                      ".inf",
                                                      "nan",
                                                      "inf",
                                                      "2147483648",
                                                      "4294967297",
                                                      "9223372036854775808",
                                                      "18446744073709551616",
                                                      "1e-300",
                                                      "\xff",
                                                      "\xc0\x80",
                                                      "\xed\xa0\x80",
                                                      "\x00",
                                                      "\x01",
                                                      "\n",
                                                      "? [a]\n: 1\n",
                                                      "&a [*a]",
                                                      "*a",
                                                      "|\n  x\n",
                                                      "{",
                                                      "[",
                                                      "\"",
                                                      ":",
                                                      ", "};

}  // namespace

void ByteMutator::edit(std::string& text) {
  const size_t at = below(text.size() + 1);
  switch (below(5)) {
    case 0:  // flip bits of one byte
      if (!text.empty()) text[below(text.size())] ^= static_cast<char>(1 + below(255));
      break;
    case 1:  // delete a range
      text.erase(at, below(16) + 1);
      break;
    case 2: {  // duplicate a range somewhere else
      const std::string piece = text.substr(below(text.size() + 1), below(32) + 1);
      text.insert(below(text.size() + 1), piece);
      break;
    }
    case 3:  // insert a token
      text.insert(at, kTokens[below(kTokens.size())]);
      break;
    default: {  // replace the number at or after `at` with a token
      const size_t start = text.find_first_of("0123456789", at);
      if (start == std::string::npos) break;
      const size_t end = text.find_first_not_of("0123456789.e+-", start);
      text.replace(start, (end == std::string::npos ? text.size() : end) - start, kTokens[below(15)]);
    }
  }
}

std::string ByteMutator::mutate(std::string input) {
  const size_t edits = 1 + below(4);
  for (size_t i = 0; i < edits; ++i) edit(input);
  return input;
}

}  // namespace tpsim::fuzz
