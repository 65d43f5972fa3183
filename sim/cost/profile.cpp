// Profile lookups: protocol regimes and attention kernels (the embedded defaults and the profile a scenario names
// are read by input/profile/profile_reader.cpp).
#include "sim/cost/profile.hpp"

#include <filesystem>
#include <optional>

#include "base/input_error.hpp"
#include "base/input_file.hpp"

namespace tpsim::sim {

const std::vector<TransportSection>& transport_sections() {
  using Kind = TransportSection::SettingKind;
  static const std::vector<TransportSection> sections = {
      {"one_shot",
       &CostProfile::one_shot,
       "all-reduces run as one-shot custom kernels",
       "one_shot",
       false,
       false,
       {"max_bytes", Kind::kBytes, [](const CostProfile& p) { return p.one_shot_max_bytes; },
        [](CostProfile& p, double v) { p.one_shot_max_bytes = v; }, "vLLM's custom all-reduce default limit of 8 MiB"}},
      {"two_shot",
       &CostProfile::two_shot,
       "all-reduces run as two-shot custom kernels",
       "two_shot",
       false,
       false,
       {"max_bytes", Kind::kBytes, [](const CostProfile& p) { return p.two_shot_max_bytes; },
        [](CostProfile& p, double v) { p.two_shot_max_bytes = v; },
        "as one_shot's: vLLM's custom all-reduce default limit of 8 MiB"}},
      // min_ranks: the writer names the rings NCCL ran with NVLS enabled, which set it.
      {"nvls",
       &CostProfile::nvls,
       "all-reduces run as NVLS",
       "nvls",
       false,
       false,
       {"min_ranks", Kind::kRanks, [](const CostProfile& p) { return static_cast<double>(p.nvls_min_ranks); },
        [](CostProfile& p, double v) { p.nvls_min_ranks = static_cast<int>(v); }, "", 2}},
      {"multimem", &CostProfile::multimem,
       "all-reduces run as symmetric-memory multicast kernels (multimem.ld_reduce, then multimem.st, through "
       "NVSwitch; no NCCL call)",
       "multimem", false, true},
      {"multimem_gather", &CostProfile::multimem_gather,
       "all-gathers (multimem.st) and reduce-scatters (multimem.ld_reduce) run as symmetric-memory multicast kernels",
       "multimem", true, true},
      {"network", &CostProfile::network,
       "all-reduces across nodes as rings: each step's hop between nodes, striped over every NIC of the node"},
      {"tree",
       &CostProfile::tree,
       "all-reduces run as NCCL's tree (every hop, NVLink and NIC)",
       "",
       false,
       false,
       {"chunk_bytes", Kind::kPositiveBytes, [](const CostProfile& p) { return p.tree_chunk_bytes; },
        [](CostProfile& p, double v) { p.tree_chunk_bytes = v; },
        "assumed: NCCL's 4 MiB buffer over 8 steps, 8 channels"}},
  };
  return sections;
}

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
  a.forward_causal_tokens = found->second.forward_causal_tokens;
  a.unmasked_efficiency = found->second.unmasked_efficiency;
  a.backward_efficiency = found->second.backward_efficiency;
  a.backward_causal_tokens = found->second.backward_causal_tokens;
  a.fp8_efficiency.reset();
  for (const char* key : {"efficiency", "forward_causal_tokens", "unmasked_efficiency", "backward_efficiency",
                          "backward_causal_tokens"}) {
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
