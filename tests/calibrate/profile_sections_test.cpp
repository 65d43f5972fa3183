// The optional transport sections of a profile are declared once (sim::transport_sections()): every row is read,
// checked and written back by the same loops, so a new row needs no other edit to be read, refused and written.
#include <catch2/catch.hpp>
#include <string>

#include "calibrate/profile/profile_fit.hpp"
#include "input/profile/profile_reader.hpp"
#include "input/profile/profile_writer.hpp"
#include "sim/cost/profile.hpp"
#include "sim/cost/profile_fields.hpp"

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
  const std::string written = sim::profile_yaml(calibrate::profile_record(fit, "a100-sxm", {"points.csv"}));
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

namespace {

// Every value row of the sections of their own shape, with its place ("deepep.low_latency.rdma_latency_us").
std::vector<std::pair<std::string, const sim::ProfileField*>> value_rows(const sim::ProfileSection& section,
                                                                         const std::string& path) {
  std::vector<std::pair<std::string, const sim::ProfileField*>> rows;
  for (const sim::ProfileField& field : section.fields) {
    const std::string at = path + "." + field.key;
    if (field.kind == sim::ProfileField::Kind::kValue) rows.emplace_back(at, &field);
    if (field.kind == sim::ProfileField::Kind::kNested) {
      for (const auto& row : value_rows(*field.nested, at)) rows.push_back(row);
    }
  }
  return rows;
}

std::vector<std::pair<std::string, const sim::ProfileField*>> all_value_rows() {
  std::vector<std::pair<std::string, const sim::ProfileField*>> rows;
  for (const sim::ProfileSection& section : sim::profile_sections()) {
    for (const auto& row : value_rows(section, section.key)) rows.push_back(row);
  }
  return rows;
}

// A value each row accepts and the writer's %.6g gives back: a fraction of one half, a count of 7, a quarter into a
// range (above a row's written_above, and power's idle draw a quarter of its range stays below its measured draw's).
double valid_value(const sim::ProfileField& field) {
  switch (field.reads) {
    case sim::ProfileField::Reads::kFraction:
      return 0.5;
    case sim::ProfileField::Reads::kCount:
      return 7;
    case sim::ProfileField::Reads::kRange:
      break;
  }
  const double value = field.low + (field.high - field.low) / 4;
  return field.microseconds ? value * 1e-6 : value;
}

}  // namespace

TEST_CASE("every value row of the sections of their own shape is written and read back by the same table") {
  sim::WrittenProfile written;
  written.profile = *sim::default_profile("h100-sxm");
  written.gpu = "h100-sxm";
  const auto rows = all_value_rows();
  for (const auto& [path, field] : rows) field->set(written.profile, valid_value(*field));
  const sim::CostProfile back = sim::parse_profile(sim::profile_yaml(written), "back.yaml");
  for (const auto& [path, field] : rows) {
    CAPTURE(path);
    REQUIRE(field->get(back).has_value());
    // %.6g keeps each test value whole; microseconds come back through a multiply and a divide by 1e6.
    CHECK(*field->get(back) == Approx(valid_value(*field)).epsilon(1e-12));
    CHECK(back.sources.count(path) + (path.starts_with("deepep.low_latency") ? 1 : 0) == 1);
  }
}

TEST_CASE("every value row of the sections of their own shape refuses a negative value at its key") {
  // h100-sxm's profile has every section (power, deepep and its low-latency kernels, linear attention) but the
  // NCCL LL and LL128 regimes, which a profile without them must give whole (the first test's case).
  const sim::CostProfile base = *sim::default_profile("h100-sxm");
  for (const auto& [path, field] : all_value_rows()) {
    CAPTURE(path);
    if (!field->get(base)) continue;
    // The row's YAML nested as its path says, each part on a line of its own: the value is on the last line.
    std::string yaml = "gpu: h100-sxm\nbase: h100-sxm\n";
    std::string indent;
    size_t start = 0;
    int line = 2;
    for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', start)) {
      yaml += indent + path.substr(start, dot - start) + ":\n";
      indent += "  ";
      start = dot + 1;
      ++line;
    }
    yaml += indent + path.substr(start) + ": -1\n";
    ++line;
    CHECK_THROWS_WITH(sim::parse_profile(yaml, "p.yaml"),
                      Contains("p.yaml:" + std::to_string(line) + ":") && Contains(path));
  }
}
