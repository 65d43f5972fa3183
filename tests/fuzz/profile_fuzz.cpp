// Fuzz target: the calibration profile reader (YAML text to a CostProfile, bases included).
#include "input/profile/profile_reader.hpp"
#include "sim/cost/profile.hpp"
#include "tests/fuzz/fuzz_target.hpp"

void tpsim::fuzz::fuzz_one(std::string_view data) {
  sim::parse_profile(std::string(data), "fuzz.yaml");
}
