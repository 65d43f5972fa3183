// Profile lookups: protocol regimes and attention kernels (the embedded defaults and the profile a scenario names
// are read by input/profile_reader.cpp).
#include "sim/cost/profile.hpp"

#include <filesystem>
#include <optional>

#include "base/input_error.hpp"
#include "base/input_file.hpp"

namespace tpsim::sim {

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
