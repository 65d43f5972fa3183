// Re-recording the shipped-scenario times: which invariants a run breaks, and that a run that breaks one records
// nothing.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "cli/cli_support.hpp"
#include "cli/expected_times.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

sim::VariantRun variant(const std::string& name, model::TpMode mode, double time_s, double compute_s, double comm_s,
                        double exposed_comm_s) {
  sim::VariantRun v;
  v.variant.name = name;
  v.variant.mode = mode;
  v.metrics.time_s = time_s;
  v.metrics.compute_s = compute_s;
  v.metrics.comm_s = comm_s;
  v.metrics.exposed_comm_s = exposed_comm_s;
  v.metrics.idle_s = time_s - compute_s - exposed_comm_s;  // what a timeline gives: the step's rest
  return v;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tpsim_expected_times_test_" + name)).string();
}

}  // namespace

TEST_CASE("a run whose variants keep every invariant breaks none") {
  // sp: 10 s with 8 s of compute, 4 s of communication of which 2 s exposed; nocomm 8 s, faster than sp.
  const std::vector<sim::VariantRun> run = {variant("sp", model::TpMode::kSp, 10, 8, 4, 2),
                                            variant("nocomm", model::TpMode::kNoComm, 8, 8, 0, 0)};
  CHECK(test::broken_invariants("p", run).empty());
}

TEST_CASE("each broken invariant is reported with its point and variant") {
  const std::vector<sim::VariantRun> run = {
      variant("zero", model::TpMode::kSp, 0, 0, 0, 0),         // time not positive
      variant("busy", model::TpMode::kSp, 5, 6, 1, 1),         // compute 6 s > time 5 s
      variant("hidden", model::TpMode::kSp, 5, 4, 1, 2),       // exposed 2 s > comm 1 s
      variant("nocomm", model::TpMode::kNoComm, 7, 4, 1, 0)};  // communicates, and slower than all three
  const std::vector<std::string> broken = test::broken_invariants("a.yaml tp=8", run);
  REQUIRE(broken.size() == 7);
  CHECK_THAT(broken[0], Contains("a.yaml tp=8, variant zero: time_s"));
  CHECK_THAT(broken[1], Contains("variant busy: compute_s exceeds time_s"));
  CHECK_THAT(broken[2], Contains("variant busy: idle_s"));  // the step's rest: 5 - 6 - 1 s
  CHECK_THAT(broken[3], Contains("variant hidden: exposed_comm_s exceeds comm_s"));
  CHECK_THAT(broken[4], Contains("variant hidden: idle_s"));  // 5 - 4 - 2 s
  CHECK_THAT(broken[5], Contains("variant nocomm: nocomm communicates"));
  CHECK_THAT(broken[6], Contains("a.yaml tp=8: nocomm is slower"));
}

TEST_CASE("parts that do not sum to the step and negative pipeline sends are reported") {
  // 10 s: 8 s of compute, 2 s exposed, but 1 s idle as well (11 s in all); and the sends of a pipeline at -1 ms.
  sim::VariantRun sums = variant("sums", model::TpMode::kSp, 10, 8, 4, 2);
  sums.metrics.idle_s = 1;
  sim::VariantRun sends = variant("sends", model::TpMode::kSp, 10, 8, 4, 2);
  sends.pipeline.emplace();
  sends.pipeline->send_exposed_s = -1e-3;
  const std::vector<std::string> broken = test::broken_invariants("p", {sums, sends});
  REQUIRE(broken.size() == 2);
  CHECK_THAT(broken[0], Contains("variant sums: compute_s + exposed_comm_s + idle_s differs from time_s"));
  CHECK_THAT(broken[1], Contains("variant sends: the sends' exposed time"));
}

TEST_CASE("re-recording expected times writes nothing when an invariant failed") {
  const std::string path = temp_path("refused.json");
  std::ofstream(path) << "recorded before\n";
  const nlohmann::ordered_json times = {{"a.yaml", {{"sp", 1.0}}}};
  CHECK_THROWS_WITH(test::record_expected_times(path, times, {"a.yaml, variant sp: compute_s exceeds time_s"}),
                    Contains("not re-recording") && Contains("1 invariant(s) failed") &&
                        Contains("a.yaml, variant sp: compute_s exceeds time_s"));
  CHECK(test::read_file(path) == "recorded before\n");
  std::filesystem::remove(path);
}

TEST_CASE("re-recording expected times writes them when every invariant held") {
  const std::string path = temp_path("written.json");
  const nlohmann::ordered_json times = {{"a.yaml", {{"sp", 1.5}, {"nocomm", 1.0}}}};
  test::record_expected_times(path, times, {});
  CHECK(nlohmann::ordered_json::parse(test::read_file(path)) == times);
  std::filesystem::remove(path);
}
