// Profiles are complete or name their base; presets are usable by name; a profile of another GPU runs only when
// the scenario says so; every value keeps where it came from.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "base/input_error.hpp"
#include "input/profile/profile_reader.hpp"
#include "model/scenario.hpp"
#include "sim/cost/profile.hpp"
#include "sim/run/scenario_run.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

std::string scenario_with(const std::string& gpu, const std::string& calibration) {
  return "name: t\nmodel: llama-3.1-8b\nhardware: {gpu: " + gpu + "}\ncalibration: " + calibration +
         "\nworkload: {phase: forward, batch: 1, seq_len: 512, layers: 1}\nparallelism: {tp: 8}\n"
         "variants: [{name: sp, tp_mode: sp}]\n";
}

}  // namespace

TEST_CASE("a profile without a base that lacks required values is refused, naming the first of them") {
  CHECK_THROWS_WITH(sim::parse_profile("gpu: h100-sxm\nnccl: {step_latency_us: 3, link_efficiency: 0.7}\n", "p.yaml"),
                    Contains("p.yaml:1:1: the profile lacks gemm.efficiency, gemm.hbm_efficiency") &&
                        Contains("more") && Contains("base: h100-sxm"));
  // Naming a base completes it: what it does not give is the base's.
  const sim::CostProfile p =
      sim::parse_profile("gpu: h100-sxm\nbase: h100-sxm\nnccl: {step_latency_us: 3, link_efficiency: 0.7}\n", "p.yaml");
  const sim::CostProfile base = *sim::default_profile("h100-sxm");
  CHECK(p.nccl.step_latency_s == Approx(3e-6));
  CHECK(p.gemm.efficiency == base.gemm.efficiency);
  CHECK(p.nccl_call_latency_s == base.nccl_call_latency_s);
  // The overridden values have this file's source; the others keep the base's.
  CHECK_THAT(p.sources.at("nccl.step_latency_us").source, Contains("given in p.yaml without a source"));
  CHECK(p.sources.at("gemm.efficiency").fitted);
}

TEST_CASE("a base is a GPU preset's profile or a profile file beside the profile, and a chain of them ends") {
  const auto dir = std::filesystem::temp_directory_path() / ("tpsim_profile_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "a.yaml") << "gpu: h100-sxm\nbase: h100-sxm\nattention: {efficiency: 0.5}\n";
  std::ofstream(dir / "b.yaml") << "gpu: h100-sxm\nbase: a.yaml\nlaunch: {host_us: 2}\n";
  const sim::CostProfile b = sim::load_profile_file((dir / "b.yaml").string());
  CHECK(b.attention.efficiency == 0.5);
  CHECK(b.host_launch_s == Approx(2e-6));
  std::ofstream(dir / "c.yaml") << "gpu: h100-sxm\nbase: d.yaml\n";
  std::ofstream(dir / "d.yaml") << "gpu: h100-sxm\nbase: c.yaml\n";
  CHECK_THROWS_WITH(sim::load_profile_file((dir / "c.yaml").string()), Contains("profiles deep"));
  CHECK_THROWS_WITH(sim::parse_profile("gpu: h100-sxm\nbase: no-such\n", (dir / "e.yaml").string()),
                    Contains("e.yaml:2:7: base: 'no-such' is neither a GPU preset with a profile"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a preset profile is usable by name, and a profile of another GPU runs only with transfer: as_is") {
  const model::Scenario by_name = model::parse_scenario(scenario_with("h200-sxm", "h200-sxm"), "t.yaml");
  CHECK(sim::resolve_profile(by_name, "h200-sxm").gpu == "h200-sxm");
  const model::Scenario other = model::parse_scenario(scenario_with("b200", "h100-sxm"), "t.yaml");
  CHECK_THROWS_WITH(sim::run_scenario(other), Contains("t.yaml:4:14: calibration: the profile") &&
                                                  Contains("was fitted for h100-sxm, and the scenario runs b200") &&
                                                  Contains("--gpu b200") && Contains("transfer: as_is"));
  const model::Scenario as_is =
      model::parse_scenario(scenario_with("b200", "{profile: h100-sxm, transfer: as_is}"), "t.yaml");
  CHECK(as_is.calibration_as_is);
  CHECK(sim::resolve_profile(as_is, "b200").gpu == "h100-sxm");
  CHECK_THROWS_WITH(model::parse_scenario(scenario_with("b200", "{profile: h100-sxm, transfer: scaled}"), "t.yaml"),
                    Contains("t.yaml:4:44") && Contains("as_is"));
}

TEST_CASE("the shipped profiles say which values no measurement fitted, and why each has the value it has") {
  const sim::CostProfile h100 = *sim::default_profile("h100-sxm");
  const auto assumed = sim::assumed_values(h100);
  const auto has = [&](const std::string& key) {
    return std::any_of(assumed.begin(), assumed.end(), [&](const auto& a) { return a.first == key; });
  };
  CHECK(has("attention.efficiency"));
  CHECK(has("gemm.tile_m"));
  CHECK(has("nccl.sms"));
  CHECK(has("copy_engine.step_latency_us"));
  CHECK_FALSE(has("gemm.efficiency"));
  CHECK_FALSE(has("nccl.link_efficiency"));
  // NCCL's device time per call is fitted on the H100 rows (timed as the device's); torch.distributed's host time
  // per call is the h200 profile's fit on its torch-timed sweep, carried here (the host's work, not the GPU's).
  CHECK_FALSE(has("nccl.call_latency_us"));
  CHECK(has("launch.collective_host_us"));
  const sim::CostProfile h200 = *sim::default_profile("h200-sxm");
  CHECK(h200.sources.at("launch.collective_host_us").fitted);
  CHECK(h100.collective_host_s == h200.collective_host_s);
  CHECK_FALSE(has("nccl.small_messages.link_efficiency"));  // fitted with the ring's Simple regime
  for (const auto& [key, source] : assumed) {
    INFO(key);
    CHECK_FALSE(source.source.empty());
    CHECK_THAT(source.source, !Contains("without a source"));
  }
}

TEST_CASE("a deepep.low_latency section is whole where the base has none, and overrides one value where it has") {
  // A base with one (h100-sxm): a value alone overrides it, the others stay the base's.
  const sim::CostProfile p =
      sim::parse_profile("gpu: h100-sxm\nbase: h100-sxm\ndeepep: {low_latency: {rdma_latency_us: 40}}\n", "p.yaml");
  const sim::CostProfile base = *sim::default_profile("h100-sxm");
  REQUIRE(p.deepep->low_latency);
  CHECK(p.deepep->low_latency->rdma_latency_s == Approx(40e-6));
  CHECK(p.deepep->low_latency->rdma_efficiency == base.deepep->low_latency->rdma_efficiency);
  // Without one in a base every value must be given: the shipped (complete, baseless) profile with its
  // low_latency subsection cut to its network values.
  std::ifstream shipped(std::string(TPSIM_SOURCE_DIR) + "/scenarios/presets/profiles/h100-sxm.yaml");
  std::string text((std::istreambuf_iterator<char>(shipped)), std::istreambuf_iterator<char>());
  const size_t from = text.find("  low_latency:\n"), to = text.find("    rdma_efficiency:", from);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  text.erase(from + std::string("  low_latency:\n").size(), to - from - std::string("  low_latency:\n").size());
  CHECK_THROWS_WITH(sim::parse_profile(text, "p.yaml"), Contains("p.yaml:") && Contains("dispatch_nvlink_efficiency"));
  CHECK_THROWS_WITH(
      sim::parse_profile("gpu: h100-sxm\nbase: h100-sxm\ndeepep: {low_latency: {rdma_efficiency: 1.5}}\n", "p.yaml"),
      Contains("deepep.low_latency.rdma_efficiency"));
  CHECK_THROWS_WITH(
      sim::parse_profile("gpu: h100-sxm\nbase: h100-sxm\ndeepep: {low_latency: {floor_us: 3}}\n", "p.yaml"),
      Contains("unknown key") && Contains("rdma_latency_us"));
}
