// libFuzzer's entry point for every target: InputError is an accepted outcome; anything else escapes and
// aborts the process (std::terminate), which libFuzzer records as a crash with its input.
#include <cstddef>
#include <cstdint>

#include "base/input_error.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    tpsim::fuzz::fuzz_one(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const tpsim::InputError&) {
  }
  return 0;
}
