// Profile lookups: protocol regimes, the embedded defaults, and the profile a scenario names.
#include "sim/cost/profile.hpp"

#include <filesystem>
#include <optional>

#include "base/input_error.hpp"
#include "base/input_file.hpp"
#include "input/presets.hpp"
#include "input/yaml_reader.hpp"

namespace tpsim::sim {

using model::YamlReader;

const TransportParams* protocol_regime(const CostProfile& profile, model::Protocol protocol) {
  const auto present = [](const std::optional<TransportParams>& t) { return t ? &*t : nullptr; };
  switch (protocol) {
    case model::Protocol::kSimple:
      return &profile.nccl;
    case model::Protocol::kLowLatency:
      return present(profile.nccl_small);
    case model::Protocol::kLL:
      return present(profile.nccl_ll);
    case model::Protocol::kLL128:
      return present(profile.nccl_ll128);
    case model::Protocol::kAuto:
      break;
  }
  return nullptr;
}

std::string protocol_unavailable_reason(const CostProfile& profile, model::Protocol protocol) {
  if (protocol == model::Protocol::kAuto || protocol_regime(profile, protocol)) return "";
  const std::string name = model::to_string(protocol);
  return "protocol " + name + ": the calibration profile (" + profile.name + ") has no nccl." + name +
         " section; fit one with `tpsim calibrate` on rings measured with that NCCL_PROTO, or use protocol auto or "
         "simple";
}

std::optional<CostProfile> default_profile(const std::string& gpu_name) {
  const auto text = model::find_preset("profiles", gpu_name, "yaml");
  if (!text) return std::nullopt;
  CostProfile profile = parse_profile(std::string(*text), "presets/profiles/" + gpu_name + ".yaml");
  profile.name = "default (" + gpu_name + ")";
  return profile;
}

std::string no_default_profile_message(const std::string& gpu_name) {
  return "no default calibration profile for GPU '" + gpu_name +
         "'; profiles exist for: " + model::join_names(model::preset_names("profiles")) +
         "; give a profile file (tpsim calibrate writes one)";
}

CostProfile resolve_profile(const model::Scenario& scenario, const std::string& gpu_name) {
  const model::LocatedRef& ref = scenario.calibration;
  const YamlReader in(scenario.file);
  CostProfile profile;
  if (ref.value == "default") {
    std::optional<CostProfile> preset = default_profile(gpu_name);
    if (!preset) in.fail(ref.node, no_default_profile_message(gpu_name));
    profile = *preset;
  } else if (model::find_preset("profiles", ref.value, "yaml")) {
    profile = *default_profile(ref.value);
  } else {
    const std::filesystem::path path = std::filesystem::path(scenario.file).parent_path() / ref.value;
    if (!is_regular_file(path.string())) {
      in.fail(ref.node, "calibration: '" + echo_value(ref.value) + "' is neither a profile file (" +
                            echo_path(path.string()) + ") nor a GPU preset's profile (" +
                            model::join_names(model::preset_names("profiles")) + "), nor default");
    }
    profile = load_profile_file(path.string());
  }
  if (profile.gpu != gpu_name && !scenario.calibration_as_is) {
    in.fail(ref.node, "calibration: the profile " + profile.name + " was fitted for " + profile.gpu +
                          ", and the scenario runs " + gpu_name + "; carry it over with `tpsim calibrate ... --gpu " +
                          gpu_name + " --measured-on " + profile.gpu +
                          "`, or use it unchanged with calibration: {profile: ..., transfer: as_is}");
  }
  return profile;
}

std::string select_attention_kernel(CostProfile& profile, const std::string& kernel) {
  AttentionParams& a = profile.attention;
  if (kernel == a.kernel) return "";
  const auto found = a.kernels.find(kernel);
  if (found == a.kernels.end()) {
    std::string known = a.kernel.empty() ? "" : a.kernel + " (its own)";
    for (const auto& [name, rates] : a.kernels) known += (known.empty() ? "" : ", ") + name;
    return "profile " + profile.name + " has no rates for attention kernel " + kernel + " (attention.kernels." +
           kernel + "); it knows: " + (known.empty() ? "none by name" : known);
  }
  const std::string own = a.kernel;
  a.efficiency = found->second.efficiency;
  a.backward_efficiency = found->second.backward_efficiency;
  a.fp8_efficiency.reset();
  for (const char* key : {"efficiency", "backward_efficiency"}) {
    const auto source = profile.sources.find("attention.kernels." + kernel + "." + key);
    if (source != profile.sources.end()) profile.sources["attention." + std::string(key)] = source->second;
  }
  profile.sources.erase("attention.fp8_efficiency");
  a.kernel = kernel;
  return "";
}

std::vector<std::pair<std::string, ValueSource>> assumed_values(const CostProfile& profile) {
  std::vector<std::pair<std::string, ValueSource>> out;
  for (const auto& [key, source] : profile.sources) {
    if (!source.fitted) out.emplace_back(key, source);
  }
  return out;
}

}  // namespace tpsim::sim
