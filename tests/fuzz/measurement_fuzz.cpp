// Fuzz target: the measurement JSON-lines reader.
#include "base/measurement.hpp"
#include "tests/fuzz/fuzz_target.hpp"

void tpsim::fuzz::fuzz_one(std::string_view data) {
  calibrate::parse_measurements(std::string(data), "fuzz.jsonl");
}
