// Every scenario shipped in scenarios/ (every point of its sweep) runs, obeys the invariants of its variants, and
// matches the times recorded in tests/cli/expected_times.json (regenerate: TPSIM_UPDATE_EXPECTED=1 ctest -R shipped).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"
#include "model/scenario.hpp"
#include "model/sweep.hpp"
#include "sim/scenario_run.hpp"

using namespace tpsim;

namespace {

std::vector<std::string> shipped_scenarios() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TPSIM_SOURCE_DIR) + "/scenarios")) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

const std::string kExpectedPath = std::string(TPSIM_SOURCE_DIR) + "/tests/cli/expected_times.json";

}  // namespace

TEST_CASE("every shipped scenario runs and matches its recorded times") {
  const auto files = shipped_scenarios();
  REQUIRE(files.size() >= 3);
  const bool update = std::getenv("TPSIM_UPDATE_EXPECTED") != nullptr;
  nlohmann::ordered_json expected = nlohmann::ordered_json::object();
  if (!update) expected = nlohmann::ordered_json::parse(test::read_file(kExpectedPath));
  nlohmann::ordered_json actual = nlohmann::ordered_json::object();
  for (const std::string& file : files) {
    INFO("scenario " << file);
    const model::Scenario base = model::load_scenario(std::string(TPSIM_SOURCE_DIR) + "/scenarios/" + file);
    for (const model::SweepPoint& point : model::expand_sweep(base)) {
      std::string key = file;
      for (const auto& [axis, value] : point.values) key += " " + axis + "=" + value;
      INFO("point " << key);
      const sim::ScenarioRun run = sim::run_scenario(point.scenario);
      double fastest_with_comm = 1e300;
      std::optional<double> nocomm;
      for (const sim::VariantRun& v : run.variants) {
        const sim::Metrics& m = v.metrics;
        INFO("variant " << v.variant.name);
        CHECK(m.time_s > 0);
        CHECK(m.compute_s <= m.time_s * (1 + 1e-12));
        CHECK(m.exposed_comm_s <= m.comm_s * (1 + 1e-12));
        if (v.variant.mode == model::TpMode::kNoComm) {
          nocomm = m.time_s;
          CHECK(m.comm_s == 0);
        } else {
          fastest_with_comm = std::min(fastest_with_comm, m.time_s);
        }
        actual[key][v.variant.name] = m.time_s;
        if (!update) {
          REQUIRE(expected.contains(key));
          REQUIRE(expected[key].contains(v.variant.name));
          CHECK(m.time_s == Approx(expected[key][v.variant.name].get<double>()).epsilon(1e-6));
        }
      }
      if (nocomm) CHECK(*nocomm <= fastest_with_comm);
    }
  }
  if (update) {
    std::ofstream(kExpectedPath) << actual.dump(2) << "\n";
  } else {
    CHECK(actual.size() == expected.size());  // no stale entries for removed scenarios
  }
}
