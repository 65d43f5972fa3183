// The contract of every fuzz target: bad input may throw InputError (a one-line message for the user);
// any other exception, a crash, a sanitizer report or a hang is a finding.
#pragma once

#include <string_view>

namespace tpsim::fuzz {

// Defined once per target: reads `data` as that reader's input.
void fuzz_one(std::string_view data);

}  // namespace tpsim::fuzz
