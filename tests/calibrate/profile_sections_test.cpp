// The optional transport sections of a profile are declared once (sim::transport_sections()): every row is read,
// checked and written back by the same loops, so a new row needs no other edit to be read, refused and written.
#include <catch2/catch.hpp>
#include <string>

#include "calibrate/profile/profile_fit.hpp"
#include "input/profile_reader.hpp"
#include "sim/cost/profile.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

// A setting value each kind accepts and the writer gives back exactly: a whole number of bytes, a rank count above
// the default that the writer leaves out.
double setting_value(const sim::TransportSection& section) {
  return section.setting.kind == sim::TransportSection::SettingKind::kRanks ? 4 : 2097152;
}

// One section's YAML: both transport values, and its setting when it has one.
std::string section_yaml(const sim::TransportSection& section) {
  std::string y = std::string(section.key) + ":\n  step_latency_us: 3\n  link_efficiency: 0.5\n";
  if (section.setting.key)
    y += "  " + std::string(section.setting.key) + ": " + std::to_string(static_cast<long>(setting_value(section))) +
         "\n";
  return y;
}

}  // namespace

TEST_CASE(
    "every optional transport section is read whole where the base has none, and overrides one value where it has") {
  // a100-sxm's profile has no NVLS, multicast or tree sections (no in-switch reduction, no multi-node tree fit) but
  // has one-shot, two-shot and network ones: both cases occur.
  const sim::CostProfile base = *sim::default_profile("a100-sxm");
  for (const sim::TransportSection& section : sim::transport_sections()) {
    CAPTURE(section.key);
    const std::string one_value =
        "gpu: a100-sxm\nbase: a100-sxm\n" + std::string(section.key) + ": {step_latency_us: 3}\n";
    if ((base.*section.params).has_value()) {
      const sim::CostProfile p = sim::parse_profile(one_value, "p.yaml");
      CHECK((p.*section.params)->step_latency_s == Approx(3e-6));
      CHECK((p.*section.params)->link_efficiency == (base.*section.params)->link_efficiency);
    } else {
      CHECK_THROWS_WITH(sim::parse_profile(one_value, "p.yaml"),
                        Contains("p.yaml:3:") && Contains("needs the key 'link_efficiency'"));
    }
    const sim::CostProfile whole =
        sim::parse_profile("gpu: a100-sxm\nbase: a100-sxm\n" + section_yaml(section), "p.yaml");
    CHECK((whole.*section.params)->link_efficiency == 0.5);
    CHECK_THAT(whole.sources.at(std::string(section.key) + ".link_efficiency").source, Contains("given in p.yaml"));
    if (section.setting.key) CHECK(section.setting.get(whole) == setting_value(section));
    CHECK_THROWS_WITH(
        sim::parse_profile("gpu: a100-sxm\nbase: a100-sxm\n" + std::string(section.key) + ": {bogus: 1}\n", "p.yaml"),
        Contains("p.yaml:3:") && Contains("unknown key 'bogus' in " + std::string(section.key)));
  }
}

TEST_CASE("a profile written with every optional transport section reads back with the same values") {
  std::string text = "gpu: a100-sxm\nbase: a100-sxm\n";
  for (const sim::TransportSection& section : sim::transport_sections()) text += section_yaml(section);
  calibrate::ProfileFit fit;
  fit.profile = sim::parse_profile(text, "p.yaml");
  fit.base = "a100-sxm";
  fit.base_ref = "a100-sxm";
  const std::string written = calibrate::profile_yaml(fit, "a100-sxm", {"points.csv"});
  const sim::CostProfile back = sim::parse_profile(written, "back.yaml");
  for (const sim::TransportSection& section : sim::transport_sections()) {
    CAPTURE(section.key);
    REQUIRE((back.*section.params).has_value());
    CHECK((back.*section.params)->step_latency_s == (fit.profile.*section.params)->step_latency_s);
    CHECK((back.*section.params)->link_efficiency == (fit.profile.*section.params)->link_efficiency);
    if (section.setting.key) CHECK(section.setting.get(back) == section.setting.get(fit.profile));
    // Not fitted here: each section says it came from the base.
    CHECK_THAT(written, Contains(std::string(section.key) + ":\n  step_latency_us: 3\n"));
  }
}
