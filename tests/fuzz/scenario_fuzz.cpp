// Fuzz target: the scenario loader (YAML text to a checked Scenario) and the first points of its sweep.
#include "input/sweep.hpp"
#include "model/scenario.hpp"
#include "tests/fuzz/fuzz_target.hpp"

void tpsim::fuzz::fuzz_one(std::string_view data) {
  const model::Scenario scenario = model::parse_scenario(std::string(data), "fuzz.yaml");
  const model::SweepPlan plan(scenario);
  constexpr size_t kPoints = 4;  // each point parses the document again: a few keep the target fast
  for (size_t i = 0; i < plan.size() && i < kPoints; ++i) plan.point(i);
}
