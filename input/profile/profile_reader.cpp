// Profile YAML reader: the sections of their own shape as their tables say (sim::profile_sections(): gemm, memory,
// attention, deepep, linear_attention, nccl, copy_engine, power, launch) and the optional transport sections
// (sim::transport_sections(): one_shot, two_shot, nvls, multimem, multimem_gather, network, tree); times in
// microseconds. A profile gives every required value or names its base
// (a GPU preset's default profile or another profile file), whose values it overrides key by key. Every
// value keeps where it came from: fitted (listed in its section's fit.values) or its source text.
#include "input/profile/profile_reader.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

#include "base/input_error.hpp"
#include "base/input_file.hpp"
#include "base/limits.hpp"
#include "base/units.hpp"
#include "input/presets.hpp"
#include "input/yaml_reader.hpp"
#include "model/layers/implementation.hpp"
#include "sim/cost/power_limit.hpp"
#include "sim/cost/profile.hpp"
#include "sim/cost/profile_fields.hpp"

namespace tpsim::sim {
namespace {

using model::YamlReader;

// A base that names a base ... deeper than this is taken for a cycle.
constexpr int kMaxBaseDepth = 8;
// More ranks than this (nvls.min_ranks) is a typo.
constexpr int64_t kMaxRanks = 65536;
// The attention kernels a profile measures: every kernel a scenario's implementation.attention names but the
// profile's own (fa2, fa3, cudnn).
const std::vector<std::string> kAttentionKernels = [] {
  std::vector<std::string> names = names_of(model::kAttentionKernelNames);
  std::erase(names, model::to_string(model::AttentionKernel::kProfile));
  return names;
}();

// The required values `root` lacks (the required keys of the sections every profile has), the first few by name
// ("gemm.tile_m, nccl.sms and 3 more"); empty if none.
std::string missing_required(const YAML::Node& root) {
  constexpr size_t kNamed = 4;
  std::vector<std::string> missing;
  for (const ProfileSection& section : profile_sections()) {
    if (section.present) continue;
    const YAML::Node node = root[section.key];
    for (const ProfileField& field : section.fields) {
      if (field.required && (!node || !node.IsMap() || !node[field.key])) {
        missing.push_back(std::string(section.key) + "." + field.key);
      }
    }
  }
  std::string text;
  for (size_t i = 0; i < missing.size() && i < kNamed; ++i) text += (i ? ", " : "") + missing[i];
  if (missing.size() > kNamed) text += " and " + std::to_string(missing.size() - kNamed) + " more";
  return text;
}

std::string read_text_file(const std::string& path) {
  return read_input_file(path, "profile", model::kMaxYamlFileBytes);
}

class ProfileReader {
 public:
  ProfileReader(std::string origin, int depth) : in_(std::move(origin)), depth_(depth) {}

  CostProfile read(const std::string& text) {
    const YAML::Node root = in_.parse_text(text);
    std::vector<std::string> sections = {"gpu", "base"};
    for (size_t i = 0; i < profile_sections().size(); ++i) {
      if (i == kSectionsBeforeTransports) {
        for (const TransportSection& section : transport_sections()) sections.emplace_back(section.key);
      }
      sections.emplace_back(profile_sections()[i].key);
    }
    sections.emplace_back("source");
    in_.expect_map(root, "the profile", sections);
    in_.require(root, "gpu", "the profile");
    CostProfile p;
    if (const YAML::Node base = root["base"]) {
      p = read_base(base);
    } else if (const std::string missing = missing_required(root); !missing.empty()) {
      in_.fail(root, "the profile lacks " + missing +
                         "; a profile gives every value, or names the profile its other values come from (base: "
                         "h100-sxm, a GPU preset, or a profile file)");
    }
    p.name = in_.file();
    p.gpu = in_.string(root["gpu"], "gpu");
    read_sections(root, p);
    return p;
  }

 private:
  // The base: a GPU preset's default profile, or a profile file relative to this one.
  CostProfile read_base(const YAML::Node& node) const {
    if (depth_ >= kMaxBaseDepth) {
      in_.fail(node, "base: more than " + std::to_string(kMaxBaseDepth) + " profiles deep (do two name each other?)");
    }
    const std::string name = in_.string(node, "base");
    if (const auto preset = model::find_preset("profiles", name, "yaml")) {
      return ProfileReader("presets/profiles/" + name + ".yaml", depth_ + 1).read(std::string(*preset));
    }
    const std::filesystem::path path = std::filesystem::path(in_.file()).parent_path() / name;
    if (!is_regular_file(path.string())) {
      in_.fail(node, "base: '" + name + "' is neither a GPU preset with a profile (" +
                         model::join_names(model::preset_names("profiles")) + ") nor a profile file");
    }
    return ProfileReader(path.string(), depth_ + 1).read(read_text_file(path.string()));
  }

  double fraction(const YAML::Node& node, const std::string& what) const {
    const double value = in_.positive_number(node, what);
    if (value > 1.0 || value < model::kMinEfficiency) {
      in_.fail(node, what + " must be in [" + model::format_number("%g", model::kMinEfficiency) + ", 1], got " +
                         model::YamlReader::show(node));
    }
    return value;
  }

  int bounded_int(const YAML::Node& node, const std::string& what, int64_t max) const {
    const int64_t value = in_.positive_int(node, what);
    if (value > max) in_.fail(node, what + " must be at most " + std::to_string(max) + ", got " + node.Scalar());
    return static_cast<int>(value);
  }

  // A latency or overhead: from 0 to a second (kMaxProfileSeconds), so no sum of them overflows the clock.
  double microseconds(const YAML::Node& node, const std::string& what) const {
    return in_.number_in(node, what, 0, model::kMaxProfileSeconds * 1e6) * 1e-6;
  }

  double bytes(const YAML::Node& node, const std::string& what) const {
    return in_.number_in(node, what, 0, model::kMaxSimulatedBytes);
  }

  // A fit's record: a note ("not fitted: ...") or a mapping whose values, points and errors are plain, the values a
  // list of the section's keys.
  void check_fit(const YAML::Node& fit, const std::string& what) const {
    if (fit.IsScalar()) return;
    if (!fit.IsMap())
      in_.fail(fit, what + " must be a mapping (values, points, errors) or a note; got " + YamlReader::show(fit));
    for (const auto& entry : fit) {
      const std::string key = entry.first.Scalar();
      if (key == "values") {
        if (!entry.second.IsSequence()) in_.fail(entry.second, what + ".values must be a list of the section's keys");
        for (const YAML::Node& v : entry.second) in_.string(v, what + ".values item");
      } else if (key == "points" || key.ends_with("_pct")) {
        in_.non_negative_number(entry.second, what + "." + key);
      }
    }
  }

  // Where each value of `section` comes from: keys listed in its fit's `values` are fitted (a fit without
  // such a list fits every key but those with a source of their own); a key with a source of its own
  // (`<key>_source`, or the named `own_sources`) is fitted when that source says "fitted", else the source
  // says where it comes from; the others take the section's source. A regime inside a section without a
  // fit of its own shares `parent_fit`.
  void record_sources(CostProfile& p, const YAML::Node& node, const std::string& section,
                      const std::map<std::string, std::string>& own_sources = {},
                      const YAML::Node& parent_fit = YAML::Node()) const {
    const std::string section_source = node["source"] ? in_.string(node["source"], section + ".source")
                                                      : "given in " + in_.file() + " without a source";
    if (node["fit"]) check_fit(node["fit"], section + ".fit");
    const YAML::Node fit = node["fit"] ? node["fit"] : parent_fit;
    std::string fit_text;
    std::vector<std::string> fitted;
    bool fit_lists = false;
    if (fit && fit.IsMap()) {
      fit_text = "fitted: " + (fit["points"] ? fit["points"].Scalar() : std::string("?")) + " points" +
                 (fit["max_abs_error_pct"] ? ", max error " + fit["max_abs_error_pct"].Scalar() + "%" : "");
      if (const YAML::Node values = fit["values"]; values && values.IsSequence()) {
        fit_lists = true;
        for (const YAML::Node& v : values) fitted.push_back(v.Scalar());
      }
    }
    for (const auto& entry : node) {
      const std::string key = entry.first.Scalar();
      if (!entry.second.IsScalar() || key == "source" || key == "fit" || key.find("_source") != std::string::npos) {
        continue;
      }
      std::string own;
      if (node[key + "_source"]) own = in_.string(node[key + "_source"], section + "." + key + "_source");
      if (const auto found = own_sources.find(key); found != own_sources.end() && node[found->second]) {
        own = in_.string(node[found->second], section + "." + found->second);
      }
      ValueSource v{entry.second.Scalar(), false, own.empty() ? section_source : own};
      if (!own.empty()) {
        v.fitted = own.rfind("fitted", 0) == 0;
      } else if (!fit_text.empty() && (!fit_lists || std::find(fitted.begin(), fitted.end(), key) != fitted.end())) {
        v.fitted = true;
        v.source = fit_text;
      }
      p.sources[section + "." + key] = v;
    }
  }

  static std::vector<std::string> transport_keys(const std::vector<std::string>& extra) {
    std::vector<std::string> keys = {"step_latency_us", "link_efficiency", "source", "fit"};
    keys.insert(keys.end(), extra.begin(), extra.end());
    return keys;
  }

  TransportParams transport(const YAML::Node& node, const std::string& name, TransportParams t,
                            const std::vector<std::string>& extra = {}) const {
    in_.expect_map(node, name, transport_keys(extra));
    if (node["step_latency_us"]) t.step_latency_s = microseconds(node["step_latency_us"], name + ".step_latency_us");
    if (node["link_efficiency"]) t.link_efficiency = fraction(node["link_efficiency"], name + ".link_efficiency");
    return t;
  }

  // An optional section (a protocol regime, one-shot, two-shot, NVLS, network, tree): where the base has
  // none, it has no values to fall back on, so both numbers must be given.
  std::optional<TransportParams> optional_transport(CostProfile& p, const YAML::Node& node, const std::string& name,
                                                    const std::optional<TransportParams>& base,
                                                    const std::vector<std::string>& extra = {},
                                                    const YAML::Node& parent_fit = YAML::Node()) const {
    in_.expect_map(node, name, transport_keys(extra));
    if (!base) {
      for (const char* key : {"step_latency_us", "link_efficiency"}) in_.require(node, key, name);
    }
    const TransportParams t = transport(node, name, base.value_or(TransportParams{}), extra);
    record_sources(p, node, name, {}, parent_fit);
    return t;
  }

  // One value of a section's table, `what` its name in errors.
  double read_value(const YAML::Node& node, const std::string& what, const ProfileField& field) const {
    switch (field.reads) {
      case ProfileField::Reads::kFraction:
        return fraction(node, what);
      case ProfileField::Reads::kCount:
        return bounded_int(node, what, static_cast<int64_t>(field.high));
      case ProfileField::Reads::kRange:
        break;
    }
    const double value = in_.number_in(node, what, field.low, field.high);
    return field.microseconds ? value * 1e-6 : value;
  }

  // The keys of a section's table that read by code of their own (attention's kernel and kernels).
  void read_part(CostProfile& p, const YAML::Node& node, const std::string& key) const {
    if (key == "kernel") p.attention.kernel = in_.choice(node, "attention.kernel", kAttentionKernels);
    if (key == "kernels") read_attention_kernels(p, node);
  }

  // A section of its own shape (profile_sections()), `name` its place ("gemm", "nccl.small_messages"): its keys as
  // its table says, every required one where the profile (its base) has no such section yet, then where each value
  // comes from. A section whose values its enclosing section's fit fits shares `parent_fit`.
  void read_section(CostProfile& p, const YAML::Node& node, const ProfileSection& section, const std::string& name,
                    const YAML::Node& parent_fit = YAML::Node()) const {
    std::vector<std::string> keys;
    for (const ProfileField& field : section.fields) keys.emplace_back(field.key);
    in_.expect_map(node, name, keys);
    if (section.present && !section.present(p)) {
      for (const ProfileField& field : section.fields) {
        if (field.required) in_.require(node, field.key, name);
      }
    }
    std::map<std::string, std::string> own_sources;
    for (const ProfileField& field : section.fields) {
      if (field.source_key) own_sources[field.key] = field.source_key;
      const YAML::Node value = node[field.key];
      if (!value) continue;
      const std::string what = name + "." + field.key;
      if (field.kind == ProfileField::Kind::kValue) field.set(p, read_value(value, what, field));
      if (field.kind == ProfileField::Kind::kPart) read_part(p, value, field.key);
      if (field.kind == ProfileField::Kind::kFit && std::string(field.key) != "fit") check_fit(value, what);
      if (field.kind == ProfileField::Kind::kNested) {
        read_section(p, value, *field.nested, what, field.nested->shares_parent_fit ? node["fit"] : YAML::Node());
      }
    }
    check_section(p, node, name);
    if (section.records_sources) record_sources(p, node, name, own_sources, parent_fit);
    // nccl's per-call constant has a fit of its own.
    if (const YAML::Node fit = node["call_latency_fit"];
        name == "nccl" && fit && fit.IsMap() && node["call_latency_us"]) {
      p.sources["nccl.call_latency_us"].fitted = true;
      p.sources["nccl.call_latency_us"].source =
          "fitted: " + (fit["points"] ? fit["points"].Scalar() : std::string("?")) + " points";
    }
  }

  // What a section's values must keep together: power's idle draw below its measured draw.
  void check_section(const CostProfile& p, const YAML::Node& node, const std::string& name) const {
    if (name != "power") return;
    const PowerParams& w = *p.power;
    if (w.idle_W >= w.measured_at_W) {
      in_.fail(node, "power.idle_W (" + model::format_number("%g", w.idle_W) +
                         " W) must be below power.measured_at_W (" + model::format_number("%g", w.measured_at_W) +
                         " W)");
    }
  }

  // attention.kernels: {fa2: {efficiency, forward_causal_tokens, unmasked_efficiency, backward_efficiency,
  // backward_causal_tokens, source}, ...}, each kernel whole.
  void read_attention_kernels(CostProfile& p, const YAML::Node& node) const {
    if (!node.IsMap())
      in_.fail(node, "attention.kernels must be a mapping of kernel names (" + model::join_names(kAttentionKernels) +
                         ") to their rates; got " + YamlReader::show(node));
    for (const auto& entry : node) {
      const std::string name = in_.choice(entry.first, "attention.kernels key", kAttentionKernels);
      const std::string section = "attention.kernels." + name;
      in_.expect_map(entry.second, section,
                     {"efficiency", "forward_causal_tokens", "unmasked_efficiency", "backward_efficiency",
                      "backward_causal_tokens", "source"});
      in_.require(entry.second, "efficiency", section);
      AttentionKernelRates rates;
      rates.efficiency = fraction(entry.second["efficiency"], section + ".efficiency");
      if (const YAML::Node causal = entry.second["forward_causal_tokens"]) {
        rates.forward_causal_tokens = in_.number_in(causal, section + ".forward_causal_tokens", 0, kMaxCausalTokens);
      }
      if (entry.second["unmasked_efficiency"]) {
        rates.unmasked_efficiency = fraction(entry.second["unmasked_efficiency"], section + ".unmasked_efficiency");
      }
      if (entry.second["backward_efficiency"]) {
        rates.backward_efficiency = fraction(entry.second["backward_efficiency"], section + ".backward_efficiency");
      }
      if (const YAML::Node causal = entry.second["backward_causal_tokens"]) {
        rates.backward_causal_tokens = in_.number_in(causal, section + ".backward_causal_tokens", 0, kMaxCausalTokens);
      }
      p.attention.kernels[name] = rates;
      record_sources(p, entry.second, section);
    }
  }

  // An optional transport section (transport_sections()) and its setting.
  void read_transport_section(CostProfile& p, const YAML::Node& node, const TransportSection& section) const {
    const TransportSection::Setting& setting = section.setting;
    std::vector<std::string> extra;
    if (setting.key) extra = {setting.key, std::string(setting.key) + "_source"};
    p.*section.params = optional_transport(p, node, section.key, p.*section.params, extra);
    if (!setting.key || !node[setting.key]) return;
    const YAML::Node value = node[setting.key];
    const std::string what = std::string(section.key) + "." + setting.key;
    switch (setting.kind) {
      case TransportSection::SettingKind::kBytes:
        setting.set(p, bytes(value, what));
        break;
      case TransportSection::SettingKind::kPositiveBytes:
        setting.set(p, in_.positive_number(value, what, model::kMaxSimulatedBytes));
        break;
      case TransportSection::SettingKind::kRanks:
        setting.set(p, bounded_int(value, what, kMaxRanks));
        break;
    }
  }

  // The sections of their own shape and the optional transport sections, in the order a written profile gives them.
  void read_sections(const YAML::Node& root, CostProfile& p) const {
    const std::vector<ProfileSection>& sections = profile_sections();
    for (size_t i = 0; i < sections.size(); ++i) {
      if (i == kSectionsBeforeTransports) {
        for (const TransportSection& section : transport_sections()) {
          if (const YAML::Node node = root[section.key]) read_transport_section(p, node, section);
        }
      }
      if (const YAML::Node node = root[sections[i].key]) read_section(p, node, sections[i], sections[i].key);
    }
  }

  YamlReader in_;
  int depth_;
};

}  // namespace

CostProfile parse_profile(const std::string& text, const std::string& origin) {
  return ProfileReader(origin, 0).read(text);
}

CostProfile load_profile_file(const std::string& path) {
  return parse_profile(read_text_file(path), path);
}

std::optional<CostProfile> default_profile(const std::string& gpu_name) {
  // Parsed once per process: a plan resolves its GPU's profile for each of its candidates.
  static std::map<std::string, CostProfile> parsed;
  if (const auto it = parsed.find(gpu_name); it != parsed.end()) return it->second;
  const auto text = model::find_preset("profiles", gpu_name, "yaml");
  if (!text) return std::nullopt;
  CostProfile profile = parse_profile(std::string(*text), "presets/profiles/" + gpu_name + ".yaml");
  profile.name = "default (" + gpu_name + ")";
  return parsed.emplace(gpu_name, std::move(profile)).first->second;
}

std::string no_default_profile_message(const std::string& gpu_name) {
  return "no default calibration profile for GPU '" + gpu_name +
         "'; profiles exist for: " + model::join_names(model::preset_names("profiles")) +
         "; give a profile file (tpsim calibrate writes one)";
}

CostProfile resolve_profile(const model::Scenario& scenario, const std::string& gpu_name) {
  const model::LocatedRef& ref = scenario.calibration;
  CostProfile profile;
  if (ref.value == "default") {
    std::optional<CostProfile> preset = default_profile(gpu_name);
    if (!preset) fail_at(ref.at, no_default_profile_message(gpu_name));
    profile = *preset;
  } else if (model::find_preset("profiles", ref.value, "yaml")) {
    profile = *default_profile(ref.value);
  } else {
    const std::filesystem::path path = std::filesystem::path(scenario.file).parent_path() / ref.value;
    if (!is_regular_file(path.string())) {
      fail_at(ref.at, "calibration: '" + echo_value(ref.value) + "' is neither a profile file (" +
                          echo_path(path.string()) + ") nor a GPU preset's profile (" +
                          model::join_names(model::preset_names("profiles")) + "), nor default");
    }
    profile = load_profile_file(path.string());
  }
  if (profile.gpu != gpu_name && !scenario.calibration_as_is) {
    fail_at(ref.at, "calibration: the profile " + profile.name + " was fitted for " + profile.gpu +
                        ", and the scenario runs " + gpu_name + "; carry it over with `tpsim calibrate ... --gpu " +
                        gpu_name + " --measured-on " + profile.gpu +
                        "`, or use it unchanged with calibration: {profile: ..., transfer: as_is}");
  }
  return profile;
}

}  // namespace tpsim::sim
