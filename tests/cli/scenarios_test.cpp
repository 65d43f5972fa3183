// Every scenario shipped in scenarios/ (every point of its sweep) runs, obeys the invariants of its variants, and
// matches the times recorded in tests/cli/expected_times.json (regenerate: TPSIM_UPDATE_EXPECTED=1 ctest -R shipped;
// it refuses, writing nothing, when an invariant failed in the same run).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/cli_support.hpp"
#include "cli/expected_times.hpp"
#include "input/sweep.hpp"
#include "model/scenario.hpp"
#include "sim/run/scenario_run.hpp"

using namespace tpsim;

namespace {

std::vector<std::string> shipped_scenarios() {
  std::vector<std::string> files;
  // scenarios/*.yaml and scenarios/TOPIC/*.yaml (not the presets, nor the trace comparisons' inputs in traces/, nor the
  // plan files in plans/), named by their path under scenarios/.
  const std::filesystem::path root = std::string(TPSIM_SOURCE_DIR) + "/scenarios";
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    const std::filesystem::path relative = entry.path().lexically_relative(root);
    const std::filesystem::path top = *relative.begin();
    if (entry.path().extension() == ".yaml" && top != "presets" && top != "traces" && top != "plans")
      files.push_back(relative.string());
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
  std::vector<std::string> broken;
  for (const std::string& file : files) {
    INFO("scenario " << file);
    const model::Scenario base = model::load_scenario(std::string(TPSIM_SOURCE_DIR) + "/scenarios/" + file);
    for (const model::SweepPoint& point : model::expand_sweep(base)) {
      std::string key = file;
      for (const auto& [axis, value] : point.values) key += " " + axis + "=" + value;
      INFO("point " << key);
      const sim::ScenarioRun run = sim::run_scenario(point.scenario);
      for (const std::string& line : test::broken_invariants(key, run.variants)) {
        FAIL_CHECK(line);
        broken.push_back(line);
      }
      for (const sim::VariantRun& v : run.variants) {
        // Under a scenario's skew the skewed time is recorded too, as "<variant> under skew".
        std::vector<std::pair<std::string, double>> times = {{v.variant.name, v.metrics.time_s}};
        if (v.skewed_time_s) times.emplace_back(v.variant.name + " under skew", *v.skewed_time_s);
        for (const auto& [name, seconds] : times) {
          actual[key][name] = seconds;
          if (update) continue;
          INFO("variant " << name);
          REQUIRE(expected.contains(key));
          REQUIRE(expected[key].contains(name));
          CHECK(seconds == Approx(expected[key][name].get<double>()).epsilon(1e-6));
        }
      }
    }
  }
  if (update) {
    test::record_expected_times(kExpectedPath, actual, broken);
  } else {
    CHECK(actual.size() == expected.size());  // no stale entries for removed scenarios
  }
}
