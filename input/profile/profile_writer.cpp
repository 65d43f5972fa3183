// The profile writer: each section emitted by yaml-cpp's emitter from its table, numbers formatted as the reader's
// tests expect (%.6g, counts as integers) and written as plain scalars, sources double-quoted.
#include "input/profile/profile_writer.hpp"

#include <yaml-cpp/yaml.h>

#include <map>

#include "base/units.hpp"

namespace tpsim::sim {
namespace {

std::string number_text(const ProfileField& field, double value) {
  if (field.reads == ProfileField::Reads::kCount) return std::to_string(static_cast<int>(value));
  return model::format_number("%.6g", field.microseconds ? value * 1e6 : value);
}

// A comment line by itself (yaml-cpp's emitter puts a comment that follows a nested mapping at the end of its last
// line, so a note after a section is a document of its own).
std::string comment_line(const std::string& text) {
  YAML::Emitter e;
  e << YAML::Comment(text);
  return std::string(e.c_str()) + "\n";
}

class Writer {
 public:
  explicit Writer(const WrittenProfile& written) : w_(written), p_(written.profile) {}

  std::string write() const {
    std::string y = header();
    const std::vector<ProfileSection>& sections = profile_sections();
    for (size_t i = 0; i < sections.size(); ++i) {
      if (i == kSectionsBeforeTransports) {
        for (const TransportSection& section : transport_sections()) {
          if (p_.*section.params) y += top_level(section.key, [&](YAML::Emitter& e) { transport(e, section); });
          if (const auto note = w_.notes_after.find(section.key); note != w_.notes_after.end()) {
            y += comment_line(note->second);
          }
        }
      }
      const ProfileSection& section = sections[i];
      if (section.present && !section.present(p_)) continue;
      y += top_level(section.key, [&](YAML::Emitter& e) { fields(e, section, section.key); });
    }
    return y;
  }

 private:
  std::string header() const {
    YAML::Emitter e;
    std::string comments;
    for (const std::string& line : w_.comments) comments += (comments.empty() ? "" : "\n") + line;
    if (!comments.empty()) e << YAML::Comment(comments);
    e << YAML::BeginMap << YAML::Key << "gpu" << YAML::Value << w_.gpu;
    if (!w_.base.empty()) e << YAML::Key << "base" << YAML::Value << w_.base;
    e << YAML::EndMap;
    return std::string(e.c_str()) + "\n";
  }

  // One top-level section, its keys written by `body`.
  template <class Body>
  static std::string top_level(const char* key, const Body& body) {
    YAML::Emitter e;
    e << YAML::BeginMap << YAML::Key << key << YAML::Value << YAML::BeginMap;
    body(e);
    e << YAML::EndMap << YAML::EndMap;
    return std::string(e.c_str()) + "\n";
  }

  // A text key, where the fit gave one.
  void text(YAML::Emitter& e, const std::string& path, const std::string& key) const {
    const auto found = w_.texts.find(path + "." + key);
    if (found != w_.texts.end()) e << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << found->second;
  }

  // A fit's record, where the fit gave one: its note, or its values, points and errors (each point keyed by its
  // origin, a second point of one origin numbered "#2").
  void fit(YAML::Emitter& e, const std::string& path, const std::string& key) const {
    const auto found = w_.fits.find(path + "." + key);
    if (found == w_.fits.end()) return;
    const FitRecord& r = found->second;
    e << YAML::Key << key << YAML::Value;
    if (!r.note.empty()) {
      e << YAML::DoubleQuoted << r.note;
      return;
    }
    e << YAML::BeginMap << YAML::Key << "values" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const std::string& v : r.values) e << v;
    e << YAML::EndSeq << YAML::Key << "points" << YAML::Value << std::to_string(r.points);
    if (r.errors_listed) {
      e << YAML::Key << "max_abs_error_pct" << YAML::Value << model::format_number("%.1f", r.max_abs_error_pct);
      if (r.held_out_max_abs_error_pct >= 0) {
        e << YAML::Key << "held_out_max_abs_error_pct" << YAML::Value
          << model::format_number("%.1f", r.held_out_max_abs_error_pct);
      }
      e << YAML::Key << "error_pct_per_point" << YAML::Value << YAML::BeginMap;
      std::map<std::string, int> seen;
      for (const auto& [origin, error_pct] : r.point_errors) {
        const int n = ++seen[origin];
        e << YAML::Key << YAML::DoubleQuoted << (n == 1 ? origin : origin + " #" + std::to_string(n)) << YAML::Value
          << model::format_number("%.1f", error_pct);
      }
      e << YAML::EndMap;
    }
    e << YAML::EndMap;
  }

  // attention's kernel and the other kernels' rates, each with its source.
  void part(YAML::Emitter& e, const std::string& key) const {
    const AttentionParams& a = p_.attention;
    if (key == "kernel" && !a.kernel.empty()) e << YAML::Key << "kernel" << YAML::Value << a.kernel;
    if (key != "kernels" || a.kernels.empty()) return;
    e << YAML::Key << "kernels" << YAML::Value << YAML::BeginMap;
    for (const auto& [name, rates] : a.kernels) {
      e << YAML::Key << name << YAML::Value << YAML::BeginMap << YAML::Key << "efficiency" << YAML::Value
        << model::format_number("%.6g", rates.efficiency);
      if (rates.forward_causal_tokens > 0) {
        e << YAML::Key << "forward_causal_tokens" << YAML::Value
          << model::format_number("%.6g", rates.forward_causal_tokens);
      }
      if (rates.unmasked_efficiency) {
        e << YAML::Key << "unmasked_efficiency" << YAML::Value
          << model::format_number("%.6g", *rates.unmasked_efficiency);
      }
      if (rates.backward_efficiency) {
        e << YAML::Key << "backward_efficiency" << YAML::Value
          << model::format_number("%.6g", *rates.backward_efficiency);
      }
      if (rates.backward_causal_tokens > 0) {
        e << YAML::Key << "backward_causal_tokens" << YAML::Value
          << model::format_number("%.6g", rates.backward_causal_tokens);
      }
      text(e, "attention.kernels." + name, "source");
      e << YAML::EndMap;
    }
    e << YAML::EndMap;
  }

  // A section's keys in its table's order: the values the profile has, the texts and fits the fit gave.
  void fields(YAML::Emitter& e, const ProfileSection& section, const std::string& path) const {
    for (const ProfileField& field : section.fields) {
      switch (field.kind) {
        case ProfileField::Kind::kValue:
          if (const std::optional<double> v = field.get(p_); v && *v > field.written_above) {
            e << YAML::Key << field.key << YAML::Value << number_text(field, *v);
          }
          break;
        case ProfileField::Kind::kText:
          text(e, path, field.key);
          break;
        case ProfileField::Kind::kFit:
          fit(e, path, field.key);
          break;
        case ProfileField::Kind::kNested:
          if (field.nested->present && !field.nested->present(p_)) break;
          e << YAML::Key << field.key << YAML::Value << YAML::BeginMap;
          fields(e, *field.nested, path + "." + field.key);
          e << YAML::EndMap;
          break;
        case ProfileField::Kind::kPart:
          part(e, field.key);
          break;
      }
    }
  }

  // An optional transport section: its latency and efficiency, its setting where written, its source and fit.
  void transport(YAML::Emitter& e, const TransportSection& section) const {
    const TransportParams& t = *(p_.*section.params);
    e << YAML::Key << "step_latency_us" << YAML::Value << model::format_number("%.6g", t.step_latency_s * 1e6)
      << YAML::Key << "link_efficiency" << YAML::Value << model::format_number("%.6g", t.link_efficiency);
    const TransportSection::Setting& setting = section.setting;
    if (setting.key && setting.get(p_) > setting.written_above) {
      e << YAML::Key << setting.key << YAML::Value << model::format_number("%.0f", setting.get(p_));
      text(e, section.key, std::string(setting.key) + "_source");
    }
    text(e, section.key, "source");
    fit(e, section.key, "fit");
  }

  const WrittenProfile& w_;
  const CostProfile& p_;
};

}  // namespace

std::string profile_yaml(const WrittenProfile& written) {
  return Writer(written).write();
}

}  // namespace tpsim::sim
