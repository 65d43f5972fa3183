// Profile YAML reader: sections gemm, memory, attention, nccl, copy_engine, one_shot, two_shot, nvls, network,
// tree, launch; times in microseconds.
#include "sim/profile.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <optional>
#include "model/input_error.hpp"
#include "model/presets.hpp"
#include "model/yaml_reader.hpp"

namespace tpsim::sim {
namespace {

using model::YamlReader;

double fraction(const YamlReader& in, const YAML::Node& node, const std::string& what) {
  const double value = in.positive_number(node, what);
  if (value > 1.0) in.fail(node, what + " must be in (0, 1], got " + node.Scalar());
  return value;
}

void read_gemm(const YamlReader& in, const YAML::Node& node, GemmParams& g) {
  in.expect_map(node, "gemm",
                {"efficiency", "fp8_efficiency", "fp8_source", "hbm_efficiency", "overhead_us", "tile_m", "tile_n",
                 "small_m_tile_m", "min_k_per_split", "source", "fit"});
  if (node["efficiency"]) g.efficiency = fraction(in, node["efficiency"], "gemm.efficiency");
  if (node["fp8_efficiency"]) g.fp8_efficiency = fraction(in, node["fp8_efficiency"], "gemm.fp8_efficiency");
  if (node["hbm_efficiency"]) g.hbm_efficiency = fraction(in, node["hbm_efficiency"], "gemm.hbm_efficiency");
  if (node["overhead_us"]) g.overhead_s = in.non_negative_number(node["overhead_us"], "gemm.overhead_us") * 1e-6;
  if (node["tile_m"]) g.tile_m = static_cast<int>(in.positive_int(node["tile_m"], "gemm.tile_m"));
  if (node["tile_n"]) g.tile_n = static_cast<int>(in.positive_int(node["tile_n"], "gemm.tile_n"));
  if (node["small_m_tile_m"])
    g.small_m_tile_m = static_cast<int>(in.positive_int(node["small_m_tile_m"], "gemm.small_m_tile_m"));
  if (node["min_k_per_split"]) {
    g.min_k_per_split = static_cast<int>(in.positive_int(node["min_k_per_split"], "gemm.min_k_per_split"));
  }
}

// A transport section: step latency and link efficiency, plus the section's own `extra` keys (read by
// the caller); every section may say its source and fit.
TransportParams read_transport(const YamlReader& in, const YAML::Node& node, const std::string& name, TransportParams t,
                               const std::vector<std::string>& extra = {}) {
  std::vector<std::string> keys = {"step_latency_us", "link_efficiency", "source", "fit"};
  keys.insert(keys.end(), extra.begin(), extra.end());
  in.expect_map(node, name, keys);
  if (node["step_latency_us"]) {
    t.step_latency_s = in.non_negative_number(node["step_latency_us"], name + ".step_latency_us") * 1e-6;
  }
  if (node["link_efficiency"]) t.link_efficiency = fraction(in, node["link_efficiency"], name + ".link_efficiency");
  return t;
}

// An optional transport section (a protocol regime, two-shot, NVLS, network, tree): it has no default
// values to fall back on, so both numbers must be given.
TransportParams read_optional_transport(const YamlReader& in, const YAML::Node& node, const std::string& name,
                                        const std::vector<std::string>& extra = {}) {
  const TransportParams t = read_transport(in, node, name, {}, extra);
  for (const char* key : {"step_latency_us", "link_efficiency"}) in.require(node, key, name);
  return t;
}

}  // namespace

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

CostProfile parse_profile(const std::string& text, const std::string& origin) {
  const YamlReader in(origin);
  const YAML::Node root = in.parse_text(text);
  in.expect_map(root, "the profile",
                {"gpu", "gemm", "memory", "attention", "nccl", "copy_engine", "one_shot", "two_shot", "nvls", "network",
                 "tree", "launch", "source"});
  in.require(root, "gpu", "the profile");
  CostProfile p;
  p.name = origin;
  p.gpu = in.string(root["gpu"], "gpu");
  if (root["gemm"]) read_gemm(in, root["gemm"], p.gemm);
  if (const YAML::Node m = root["memory"]) {
    in.expect_map(m, "memory", {"hbm_efficiency", "overhead_us", "source"});
    if (m["hbm_efficiency"]) p.memory.hbm_efficiency = fraction(in, m["hbm_efficiency"], "memory.hbm_efficiency");
    if (m["overhead_us"]) p.memory.overhead_s = in.non_negative_number(m["overhead_us"], "memory.overhead_us") * 1e-6;
  }
  if (const YAML::Node a = root["attention"]) {
    in.expect_map(a, "attention", {"efficiency", "fp8_efficiency", "fp8_source", "source"});
    if (a["efficiency"]) p.attention.efficiency = fraction(in, a["efficiency"], "attention.efficiency");
    if (a["fp8_efficiency"]) {
      p.attention.fp8_efficiency = fraction(in, a["fp8_efficiency"], "attention.fp8_efficiency");
    }
  }
  if (const YAML::Node n = root["nccl"]) {
    p.nccl = read_transport(
        in, n, "nccl", p.nccl,
        {"sms", "call_latency_us", "call_latency_source", "call_latency_fit", "small_messages", "ll", "ll128"});
    if (n["sms"]) p.nccl_sms = static_cast<int>(in.non_negative_number(n["sms"], "nccl.sms"));
    if (n["call_latency_us"]) {
      p.nccl_call_latency_s = in.non_negative_number(n["call_latency_us"], "nccl.call_latency_us") * 1e-6;
    }
    if (n["small_messages"]) p.nccl_small = read_optional_transport(in, n["small_messages"], "nccl.small_messages");
    if (n["ll"]) p.nccl_ll = read_optional_transport(in, n["ll"], "nccl.ll");
    if (n["ll128"]) p.nccl_ll128 = read_optional_transport(in, n["ll128"], "nccl.ll128");
  }
  if (root["copy_engine"]) p.copy_engine = read_transport(in, root["copy_engine"], "copy_engine", p.copy_engine);
  if (const YAML::Node o = root["one_shot"]) {
    p.one_shot = read_transport(in, o, "one_shot", p.one_shot, {"max_bytes"});
    if (o["max_bytes"]) p.one_shot_max_bytes = in.non_negative_number(o["max_bytes"], "one_shot.max_bytes");
  }
  if (const YAML::Node t = root["two_shot"]) {
    p.two_shot = read_optional_transport(in, t, "two_shot", {"max_bytes"});
    if (t["max_bytes"]) p.two_shot_max_bytes = in.non_negative_number(t["max_bytes"], "two_shot.max_bytes");
  }
  if (const YAML::Node n = root["nvls"]) {
    p.nvls = read_optional_transport(in, n, "nvls", {"min_ranks", "min_ranks_source"});
    if (n["min_ranks"]) p.nvls_min_ranks = static_cast<int>(in.positive_int(n["min_ranks"], "nvls.min_ranks"));
  }
  if (root["network"]) p.network = read_optional_transport(in, root["network"], "network");
  if (const YAML::Node t = root["tree"]) {
    p.tree = read_optional_transport(in, t, "tree", {"chunk_bytes"});
    if (t["chunk_bytes"]) p.tree_chunk_bytes = in.positive_number(t["chunk_bytes"], "tree.chunk_bytes");
  }
  if (const YAML::Node l = root["launch"]) {
    in.expect_map(l, "launch", {"host_us", "stream_wait_us", "gpu_wait_us", "source", "fit"});
    if (l["gpu_wait_us"]) p.gpu_wait_s = in.non_negative_number(l["gpu_wait_us"], "launch.gpu_wait_us") * 1e-6;
    if (l["host_us"]) p.host_launch_s = in.non_negative_number(l["host_us"], "launch.host_us") * 1e-6;
    if (l["stream_wait_us"]) {
      p.stream_wait_s = in.non_negative_number(l["stream_wait_us"], "launch.stream_wait_us") * 1e-6;
    }
  }
  return p;
}

std::optional<CostProfile> default_profile(const std::string& gpu_name) {
  const auto text = model::find_preset("profiles", gpu_name, "yaml");
  if (!text) return std::nullopt;
  CostProfile profile = parse_profile(std::string(*text), "presets/profiles/" + gpu_name + ".yaml");
  profile.name = "default (" + gpu_name + ")";
  return profile;
}

CostProfile load_profile_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw InputError(path + ": cannot open the profile file");
  std::ostringstream text;
  text << file.rdbuf();
  return parse_profile(text.str(), path);
}

std::string no_default_profile_message(const std::string& gpu_name) {
  return "no default calibration profile for GPU '" + gpu_name +
         "'; profiles exist for: " + model::join_names(model::preset_names("profiles")) +
         "; give a profile file (tpsim calibrate writes one)";
}

CostProfile resolve_profile(const model::Scenario& scenario, const std::string& gpu_name) {
  const model::LocatedRef& ref = scenario.calibration;
  if (ref.value == "default") {
    std::optional<CostProfile> profile = default_profile(gpu_name);
    if (!profile) YamlReader(scenario.file).fail(ref.node, no_default_profile_message(gpu_name));
    return *profile;
  }
  const std::filesystem::path path = std::filesystem::path(scenario.file).parent_path() / ref.value;
  if (!std::filesystem::exists(path)) {
    YamlReader(scenario.file)
        .fail(ref.node, "calibration: no such profile file " + path.string() + " (or use default)");
  }
  return load_profile_file(path.string());
}

}  // namespace tpsim::sim
