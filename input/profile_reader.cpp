// Profile YAML reader: sections gemm, memory, attention, linear_attention, deepep, nccl, copy_engine, the optional
// transport sections (sim::transport_sections(): one_shot, two_shot, nvls, multimem, multimem_gather, network, tree),
// power and launch; times in microseconds. A profile gives every required value or names its base
// (a GPU preset's default profile or another profile file), whose values it overrides key by key. Every
// value keeps where it came from: fitted (listed in its section's fit.values) or its source text.
#include "input/profile_reader.hpp"

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

namespace tpsim::sim {
namespace {

using model::YamlReader;

// A base that names a base ... deeper than this is taken for a cycle.
constexpr int kMaxBaseDepth = 8;
// Bounds of integer parameters (narrowed to int): a tile or split of more than 2^16 rows, or more NCCL
// SMs than any GPU has, is a typo.
constexpr int64_t kMaxTile = 65536;
constexpr int64_t kMaxSms = 1024;
constexpr int64_t kMaxRanks = 65536;
// A GEMM's tail beside a comm kernel of more tile times than this is a typo (the fit gives about one).
constexpr double kMaxTailTiles = 64;
// The attention kernels a profile measures: every kernel a scenario's implementation.attention names but the
// profile's own (fa2, fa3, cudnn).
const std::vector<std::string> kAttentionKernels = [] {
  std::vector<std::string> names = names_of(model::kAttentionKernelNames);
  std::erase(names, model::to_string(model::AttentionKernel::kProfile));
  return names;
}();

// What a profile without a base must give.
const std::vector<std::pair<std::string, std::vector<std::string>>>& required_keys() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> keys = {
      {"gemm",
       {"efficiency", "hbm_efficiency", "overhead_us", "tile_m", "tile_n", "small_m_tile_m", "min_k_per_split"}},
      {"memory", {"hbm_efficiency", "overhead_us"}},
      {"attention", {"efficiency"}},
      {"nccl", {"step_latency_us", "link_efficiency", "sms", "call_latency_us"}},
      {"copy_engine", {"step_latency_us", "link_efficiency"}},
      {"launch", {"host_us", "stream_wait_us", "gpu_wait_us", "collective_host_us"}}};
  return keys;
}

// The required values `root` lacks, the first few by name ("gemm.tile_m, nccl.sms and 3 more"); empty if none.
std::string missing_required(const YAML::Node& root) {
  constexpr size_t kNamed = 4;
  std::vector<std::string> missing;
  for (const auto& [section, keys] : required_keys()) {
    for (const std::string& key : keys) {
      if (!root[section] || !root[section].IsMap() || !root[section][key]) missing.push_back(section + "." + key);
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
    std::vector<std::string> sections = {"gpu",    "base", "gemm",       "memory", "attention", "linear_attention",
                                         "deepep", "nccl", "copy_engine"};
    for (const TransportSection& section : transport_sections()) sections.emplace_back(section.key);
    sections.insert(sections.end(), {"launch", "power", "source"});
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

  void read_gemm(CostProfile& p, const YAML::Node& node) const {
    in_.expect_map(
        node, "gemm",
        {"efficiency", "fp8_efficiency", "fp8_source", "grouped_efficiency", "grouped_source", "hbm_efficiency",
         "overhead_us", "tile_m", "tile_n", "small_m_tile_m", "min_k_per_split", "tile_source", "efficiency_source",
         "memory_bound_source", "shared_tail_tiles", "shared_tail_source", "source", "fit"});
    GemmParams& g = p.gemm;
    if (node["efficiency"]) g.efficiency = fraction(node["efficiency"], "gemm.efficiency");
    if (node["fp8_efficiency"]) g.fp8_efficiency = fraction(node["fp8_efficiency"], "gemm.fp8_efficiency");
    if (node["grouped_efficiency"]) {
      g.grouped_efficiency = fraction(node["grouped_efficiency"], "gemm.grouped_efficiency");
    }
    if (node["hbm_efficiency"]) g.hbm_efficiency = fraction(node["hbm_efficiency"], "gemm.hbm_efficiency");
    if (node["overhead_us"]) g.overhead_s = microseconds(node["overhead_us"], "gemm.overhead_us");
    if (node["tile_m"]) g.tile_m = bounded_int(node["tile_m"], "gemm.tile_m", kMaxTile);
    if (node["tile_n"]) g.tile_n = bounded_int(node["tile_n"], "gemm.tile_n", kMaxTile);
    if (node["small_m_tile_m"]) g.small_m_tile_m = bounded_int(node["small_m_tile_m"], "gemm.small_m_tile_m", kMaxTile);
    if (node["min_k_per_split"]) {
      g.min_k_per_split = bounded_int(node["min_k_per_split"], "gemm.min_k_per_split", kMaxTile);
    }
    if (node["shared_tail_tiles"]) {
      g.shared_tail_tiles = in_.number_in(node["shared_tail_tiles"], "gemm.shared_tail_tiles", 0, kMaxTailTiles);
    }
    record_sources(p, node, "gemm",
                   {{"tile_m", "tile_source"},
                    {"tile_n", "tile_source"},
                    {"small_m_tile_m", "tile_source"},
                    {"min_k_per_split", "tile_source"},
                    {"fp8_efficiency", "fp8_source"},
                    {"grouped_efficiency", "grouped_source"},
                    {"shared_tail_tiles", "shared_tail_source"}});
  }

  void read_nccl(CostProfile& p, const YAML::Node& n) const {
    p.nccl = transport(n, "nccl", p.nccl,
                       {"sms", "sms_source", "nvls_sms", "p2p_sms", "call_latency_us", "call_latency_source",
                        "call_latency_fit", "small_messages", "ll", "ll128"});
    if (n["sms"]) p.nccl_sms = bounded_int(n["sms"], "nccl.sms", kMaxSms);
    if (n["nvls_sms"]) p.nccl_nvls_sms = bounded_int(n["nvls_sms"], "nccl.nvls_sms", kMaxSms);
    if (n["p2p_sms"]) p.nccl_p2p_sms = bounded_int(n["p2p_sms"], "nccl.p2p_sms", kMaxSms);
    if (n["call_latency_us"]) p.nccl_call_latency_s = microseconds(n["call_latency_us"], "nccl.call_latency_us");
    record_sources(p, n, "nccl", {{"call_latency_us", "call_latency_source"}});
    if (n["call_latency_fit"]) check_fit(n["call_latency_fit"], "nccl.call_latency_fit");
    if (const YAML::Node fit = n["call_latency_fit"]; fit && fit.IsMap() && n["call_latency_us"]) {
      p.sources["nccl.call_latency_us"].fitted = true;
      p.sources["nccl.call_latency_us"].source =
          "fitted: " + (fit["points"] ? fit["points"].Scalar() : std::string("?")) + " points";
    }
    // A regime fitted with the ring's other regime shares the section's fit.
    if (n["small_messages"]) {
      p.nccl_small = optional_transport(p, n["small_messages"], "nccl.small_messages", p.nccl_small, {}, n["fit"]);
    }
    if (n["ll"]) p.nccl_ll = optional_transport(p, n["ll"], "nccl.ll", p.nccl_ll);
    if (n["ll128"]) p.nccl_ll128 = optional_transport(p, n["ll128"], "nccl.ll128", p.nccl_ll128);
  }

  // Where the base has no power section, all three values must be given.
  void read_power(CostProfile& p, const YAML::Node& node) const {
    in_.expect_map(node, "power",
                   {"measured_at_W", "idle_W", "exponent", "transfer_pJ_per_bit", "measured_at_W_source",
                    "idle_W_source", "exponent_source", "transfer_pJ_per_bit_source", "source", "fit", "curve_fit"});
    if (!p.power) {
      for (const char* key : {"measured_at_W", "idle_W", "exponent"}) in_.require(node, key, "power");
    }
    PowerParams w = p.power.value_or(PowerParams{});
    if (node["measured_at_W"]) w.measured_at_W = in_.number_in(node["measured_at_W"], "power.measured_at_W", 1, 1e4);
    if (node["idle_W"]) w.idle_W = in_.number_in(node["idle_W"], "power.idle_W", 0, 1e4);
    if (node["exponent"]) w.exponent = in_.number_in(node["exponent"], "power.exponent", 0.5, 10);
    // Optional: absent, transfers draw nothing the model counts.
    if (node["transfer_pJ_per_bit"]) {
      w.transfer_pJ_per_bit =
          in_.number_in(node["transfer_pJ_per_bit"], "power.transfer_pJ_per_bit", 0, kMaxEnergyPjPerBit);
    }
    if (w.idle_W >= w.measured_at_W) {
      in_.fail(node, "power.idle_W (" + model::format_number("%g", w.idle_W) +
                         " W) must be below power.measured_at_W (" + model::format_number("%g", w.measured_at_W) +
                         " W)");
    }
    p.power = w;
    record_sources(p, node, "power");
    if (node["curve_fit"]) check_fit(node["curve_fit"], "power.curve_fit");
  }

  // attention.kernels: {fa2: {efficiency, backward_efficiency, source}, ...}, each kernel whole.
  void read_attention_kernels(CostProfile& p, const YAML::Node& node) const {
    if (!node.IsMap())
      in_.fail(node, "attention.kernels must be a mapping of kernel names (" + model::join_names(kAttentionKernels) +
                         ") to their rates; got " + YamlReader::show(node));
    for (const auto& entry : node) {
      const std::string name = in_.choice(entry.first, "attention.kernels key", kAttentionKernels);
      const std::string section = "attention.kernels." + name;
      in_.expect_map(entry.second, section, {"efficiency", "backward_efficiency", "source"});
      in_.require(entry.second, "efficiency", section);
      AttentionKernelRates rates;
      rates.efficiency = fraction(entry.second["efficiency"], section + ".efficiency");
      if (entry.second["backward_efficiency"]) {
        rates.backward_efficiency = fraction(entry.second["backward_efficiency"], section + ".backward_efficiency");
      }
      p.attention.kernels[name] = rates;
      record_sources(p, entry.second, section);
    }
  }

  // Where the base has none, every value must be given.
  void read_linear_attention(CostProfile& p, const YAML::Node& node) const {
    in_.expect_map(node, "linear_attention",
                   {"efficiency", "chunk_step_us", "decode_hbm_efficiency", "decode_overhead_us", "backward_ratio",
                    "source", "fit"});
    if (!p.linear_attention) {
      for (const char* key :
           {"efficiency", "chunk_step_us", "decode_hbm_efficiency", "decode_overhead_us", "backward_ratio"}) {
        in_.require(node, key, "linear_attention");
      }
    }
    LinearAttentionParams l = p.linear_attention.value_or(LinearAttentionParams{});
    if (node["efficiency"]) l.efficiency = fraction(node["efficiency"], "linear_attention.efficiency");
    if (node["chunk_step_us"]) l.chunk_step_s = microseconds(node["chunk_step_us"], "linear_attention.chunk_step_us");
    if (node["decode_hbm_efficiency"]) {
      l.decode_hbm_efficiency = fraction(node["decode_hbm_efficiency"], "linear_attention.decode_hbm_efficiency");
    }
    if (node["decode_overhead_us"]) {
      l.decode_overhead_s = microseconds(node["decode_overhead_us"], "linear_attention.decode_overhead_us");
    }
    if (node["backward_ratio"]) {
      // Guards, not measurements: a backward does at least half its forward's work and far less than 20 times it
      // (FlashAttention's is 2.5 times, FLA's gated delta rule's 2.7).
      l.backward_ratio = in_.number_in(node["backward_ratio"], "linear_attention.backward_ratio", 0.5, 20);
    }
    p.linear_attention = l;
    record_sources(p, node, "linear_attention");
  }

  // Where the base has none, both values must be given.
  // Where the base has none, every value must be given.
  void read_deepep_low_latency(DeepEpParams& d, const YAML::Node& node) const {
    const std::vector<std::string> keys = {
        "dispatch_nvlink_efficiency", "combine_nvlink_efficiency", "dispatch_nvlink_latency_us",
        "combine_nvlink_latency_us",  "rdma_efficiency",           "rdma_latency_us"};
    in_.expect_map(node, "deepep.low_latency", keys);
    if (!d.low_latency) {
      for (const std::string& key : keys) in_.require(node, key.c_str(), "deepep.low_latency");
    }
    DeepEpLowLatencyParams l = d.low_latency.value_or(DeepEpLowLatencyParams{});
    const auto rate = [&](const char* key, double& out) {
      if (node[key]) out = fraction(node[key], std::string("deepep.low_latency.") + key);
    };
    // A kernel's floor: 1 ms is far above any published one (tens of microseconds).
    const auto floor = [&](const char* key, double& out) {
      if (node[key]) out = in_.number_in(node[key], std::string("deepep.low_latency.") + key, 0, 1000) * 1e-6;
    };
    rate("dispatch_nvlink_efficiency", l.dispatch_nvlink_efficiency);
    rate("combine_nvlink_efficiency", l.combine_nvlink_efficiency);
    rate("rdma_efficiency", l.rdma_efficiency);
    floor("dispatch_nvlink_latency_us", l.dispatch_nvlink_latency_s);
    floor("combine_nvlink_latency_us", l.combine_nvlink_latency_s);
    floor("rdma_latency_us", l.rdma_latency_s);
    d.low_latency = l;
  }

  void read_deepep(CostProfile& p, const YAML::Node& node) const {
    in_.expect_map(node, "deepep", {"nvlink_efficiency", "rdma_efficiency", "low_latency", "source", "fit"});
    if (!p.deepep) {
      for (const char* key : {"nvlink_efficiency", "rdma_efficiency"}) in_.require(node, key, "deepep");
    }
    DeepEpParams d = p.deepep.value_or(DeepEpParams{});
    if (node["nvlink_efficiency"])
      d.nvlink_efficiency = fraction(node["nvlink_efficiency"], "deepep.nvlink_efficiency");
    // DeepEP's own count includes the bytes a node sends itself, so its rate may exceed the NIC's: up to the EP
    // group's nodes over its other nodes, 4 a guard far above two nodes' 2 (the published rows give 1.08).
    if (node["rdma_efficiency"]) {
      d.rdma_efficiency = in_.number_in(node["rdma_efficiency"], "deepep.rdma_efficiency", 0.01, 4);
    }
    if (node["low_latency"]) read_deepep_low_latency(d, node["low_latency"]);
    p.deepep = d;
    record_sources(p, node, "deepep");
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

  void read_sections(const YAML::Node& root, CostProfile& p) const {
    if (root["gemm"]) read_gemm(p, root["gemm"]);
    if (const YAML::Node m = root["memory"]) {
      in_.expect_map(m, "memory", {"hbm_efficiency", "overhead_us", "source", "fit"});
      if (m["hbm_efficiency"]) p.memory.hbm_efficiency = fraction(m["hbm_efficiency"], "memory.hbm_efficiency");
      if (m["overhead_us"]) p.memory.overhead_s = microseconds(m["overhead_us"], "memory.overhead_us");
      record_sources(p, m, "memory");
    }
    if (const YAML::Node a = root["attention"]) {
      in_.expect_map(a, "attention",
                     {"kernel", "kernels", "efficiency", "fp8_efficiency", "fp8_source", "backward_efficiency",
                      "backward_source", "source", "fit"});
      if (a["kernel"]) p.attention.kernel = in_.choice(a["kernel"], "attention.kernel", kAttentionKernels);
      if (a["kernels"]) read_attention_kernels(p, a["kernels"]);
      if (a["efficiency"]) p.attention.efficiency = fraction(a["efficiency"], "attention.efficiency");
      if (a["fp8_efficiency"]) p.attention.fp8_efficiency = fraction(a["fp8_efficiency"], "attention.fp8_efficiency");
      if (a["backward_efficiency"]) {
        p.attention.backward_efficiency = fraction(a["backward_efficiency"], "attention.backward_efficiency");
      }
      record_sources(p, a, "attention", {{"fp8_efficiency", "fp8_source"}, {"backward_efficiency", "backward_source"}});
    }
    if (root["linear_attention"]) read_linear_attention(p, root["linear_attention"]);
    if (root["deepep"]) read_deepep(p, root["deepep"]);
    if (root["nccl"]) read_nccl(p, root["nccl"]);
    if (const YAML::Node c = root["copy_engine"]) {
      p.copy_engine = transport(c, "copy_engine", p.copy_engine, {"all_ranks_link_efficiency", "all_ranks_source"});
      if (c["all_ranks_link_efficiency"]) {
        p.copy_engine_all_ranks_efficiency =
            fraction(c["all_ranks_link_efficiency"], "copy_engine.all_ranks_link_efficiency");
      }
      record_sources(p, c, "copy_engine", {{"all_ranks_link_efficiency", "all_ranks_source"}});
    }
    for (const TransportSection& section : transport_sections()) {
      if (const YAML::Node node = root[section.key]) read_transport_section(p, node, section);
    }
    if (root["power"]) read_power(p, root["power"]);
    if (const YAML::Node l = root["launch"]) {
      in_.expect_map(l, "launch",
                     {"host_us", "stream_wait_us", "gpu_wait_us", "collective_host_us", "collective_host_source",
                      "collective_host_fit", "source", "fit"});
      if (l["gpu_wait_us"]) p.gpu_wait_s = microseconds(l["gpu_wait_us"], "launch.gpu_wait_us");
      if (l["host_us"]) p.host_launch_s = microseconds(l["host_us"], "launch.host_us");
      if (l["stream_wait_us"]) p.stream_wait_s = microseconds(l["stream_wait_us"], "launch.stream_wait_us");
      if (l["collective_host_us"]) {
        p.collective_host_s = microseconds(l["collective_host_us"], "launch.collective_host_us");
      }
      record_sources(p, l, "launch", {{"collective_host_us", "collective_host_source"}});
      if (l["collective_host_fit"]) check_fit(l["collective_host_fit"], "launch.collective_host_fit");
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
