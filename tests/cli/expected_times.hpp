// The shipped-scenario regression's record (tests/cli/expected_times.json): the invariants a scenario run keeps,
// and the writer that re-records the times only when every invariant held.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/run/scenario_run.hpp"

namespace tpsim::test {

// The invariants one scenario point's variants break, a line each naming the point and variant: every time
// positive, compute within the time, exposed communication within the communication, none for nocomm, and nocomm
// no slower than the fastest variant that communicates.
std::vector<std::string> broken_invariants(const std::string& point, const std::vector<sim::VariantRun>& variants);

// Writes `times` to `path`; when `broken` is not empty writes nothing and throws, listing them.
void record_expected_times(const std::string& path, const nlohmann::ordered_json& times,
                           const std::vector<std::string>& broken);

}  // namespace tpsim::test
