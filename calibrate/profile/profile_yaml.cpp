// The profile as YAML: every parameter, where it comes from, and each fit's errors.
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "base/units.hpp"
#include "calibrate/profile/power_curve.hpp"
#include "calibrate/profile/profile_fit.hpp"

namespace tpsim::calibrate {
namespace {

// Not fitted (no measurement tells tile shapes): the shapes CUTLASS's default Hopper and Ampere bf16
// kernels use, and the split-K rule of cuBLAS's heuristics as tpsim models them.
constexpr const char* kTileSource =
    "assumed: 128 x 256 output tiles per SM (64-row tiles for M <= 64), split-K while each split keeps 1024 of K";

// A transport's latency and efficiency as the first lines of its section (`indent` deep, no final newline).
std::string transport_lines(const sim::TransportParams& t, const std::string& indent = "  ") {
  return indent + "step_latency_us: " + model::format_number("%.6g", t.step_latency_s * 1e6) + "\n" + indent +
         "link_efficiency: " + model::format_number("%.6g", t.link_efficiency);
}

// A measurement's origin as a YAML key, unique within its fit: a double-quoted string (JSON's escapes are
// YAML's), a second point of one origin (an nccl-tests line's in-place result) numbered "#2".
std::string point_key(const std::string& origin, std::map<std::string, int>& seen) {
  const int n = ++seen[origin];
  const std::string key = n == 1 ? origin : origin + " #" + std::to_string(n);
  return nlohmann::json(key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Writes one profile section by section, each a member below; the optional transport sections from their table.
class ProfileWriter {
 public:
  explicit ProfileWriter(const ProfileFit& fit) : fit_(fit), p_(fit.profile) {}

  std::string write(const std::string& target_gpu, const std::vector<std::string>& files) const {
    std::string y = header(target_gpu, files) + gemm() + memory() + attention() + deepep() + linear_attention() +
                    nccl() + copy_engine();
    for (const sim::TransportSection& section : sim::transport_sections()) {
      y += transport_section(section);
      if (const auto note = fit_.absent_notes.find(section.key); note != fit_.absent_notes.end()) {
        y += "# " + note->second + "\n";
      }
    }
    return y + power() + launch();
  }

 private:
  const ComponentFit* fit_of(const std::string& name) const {
    for (const ComponentFit& c : fit_.fits) {
      if (c.name == name) return &c;
    }
    return nullptr;
  }

  // What kept a value this profile did not fit: its base.
  std::string as_in_base() const { return "as in " + fit_.base; }

  // A section's source: what fitted it and how its points' algorithm is known, or where it comes from.
  std::string fitted_source(const std::string& name, const std::string& what) const {
    const ComponentFit* c = fit_of(name);
    if (!c) return fit_.base.empty() ? std::string("not fitted: no measurements") : as_in_base();
    return "fitted on " + what + (c->basis.empty() ? "" : " (" + c->basis + ")");
  }

  // A section's fit: the values it fitted and its points' errors, `indent` deep (a section inside a section: 4
  // spaces).
  std::string fit_block(const std::string& name, const std::vector<std::string>& values,
                        const std::string& indent = "  ", const std::string& key = "fit") const {
    const ComponentFit* c = fit_of(name);
    if (!c && !fit_.base.empty()) return indent + key + ": \"not fitted here: as in " + fit_.base + "\"\n";
    // Not fitted: the section's source says what it would be fitted on.
    if (!c) return indent + key + ": \"not fitted: no measurements\"\n";
    std::string list;
    for (const std::string& v : values) list += (list.empty() ? "" : ", ") + v;
    std::string b = indent + key + ":\n" + indent + "  values: [" + list + "]\n" + indent +
                    "  points: " + std::to_string(c->errors.size()) + "\n" + indent +
                    "  max_abs_error_pct: " + model::format_number("%.1f", c->max_abs_error_pct) + "\n";
    if (c->held_out_max_abs_error_pct >= 0) {
      b += indent + "  held_out_max_abs_error_pct: " + model::format_number("%.1f", c->held_out_max_abs_error_pct) +
           "\n";
    }
    b += indent + "  error_pct_per_point:\n";
    std::map<std::string, int> seen;
    for (const PointError& e : c->errors)
      b += indent + "    " + point_key(e.origin, seen) + ": " + model::format_number("%.1f", e.error_pct) + "\n";
    return b;
  }

  std::string header(const std::string& target_gpu, const std::vector<std::string>& files) const {
    std::string files_text;
    for (const std::string& f : files) files_text += (files_text.empty() ? "" : " ") + f;
    std::string y = "# Cost profile for " + target_gpu + ", written by `tpsim calibrate " + files_text + " --gpu " +
                    target_gpu + (fit_.base.empty() ? "" : " --base " + fit_.base) +
                    "`.\n# Fractions of peak are relative to " + p_.gpu +
                    "'s preset; fitted values list their measurements' errors, the others say where they come from.\n";
    for (const std::string& refusal : fit_.refused) y += "# Refused: " + refusal + ".\n";
    y += "gpu: " + target_gpu + "\n";
    if (!fit_.base_ref.empty()) y += "base: " + fit_.base_ref + "\n";
    return y;
  }

  // gemm's fp8 and grouped rates, each with its source (absent: none).
  std::string gemm_rates() const {
    std::string fp8;
    if (p_.gemm.fp8_efficiency) {
      std::string source = fit_.fp8_source.empty() ? as_in_base() : fit_.fp8_source;
      if (const ComponentFit* c = fit_of("gemm_fp8")) {
        source += ", " + std::to_string(c->errors.size()) + " points, max error " +
                  model::format_number("%.1f%%", c->max_abs_error_pct) +
                  (c->held_out_max_abs_error_pct >= 0
                       ? ", held out " + model::format_number("%.1f%%", c->held_out_max_abs_error_pct)
                       : std::string());
      }
      fp8 = "\n  fp8_efficiency: " + model::format_number("%.6g", *p_.gemm.fp8_efficiency) + "\n  fp8_source: \"" +
            source + "\"";
    }
    if (p_.gemm.grouped_efficiency) {
      fp8 += "\n  grouped_efficiency: " + model::format_number("%.6g", *p_.gemm.grouped_efficiency) +
             "\n  grouped_source: \"" + (fit_.grouped_source.empty() ? as_in_base() : fit_.grouped_source) + "\"";
    }
    return fp8;
  }

  std::string gemm() const {
    const sim::GemmParams& g = p_.gemm;
    return "gemm:\n  efficiency: " + model::format_number("%.6g", g.efficiency) + gemm_rates() +
           "\n  hbm_efficiency: " + model::format_number("%.6g", g.hbm_efficiency) +
           "\n  overhead_us: " + model::format_number("%.6g", g.overhead_s * 1e6) +
           "\n  tile_m: " + std::to_string(g.tile_m) + "\n  tile_n: " + std::to_string(g.tile_n) +
           "\n  small_m_tile_m: " + std::to_string(g.small_m_tile_m) +
           "\n  min_k_per_split: " + std::to_string(g.min_k_per_split) + "\n  tile_source: \"" +
           (fit_.base.empty() ? std::string(kTileSource) : as_in_base()) + "\"\n" +
           (g.shared_tail_tiles > 0
                ? "  shared_tail_tiles: " + model::format_number("%.6g", g.shared_tail_tiles) +
                      "\n  shared_tail_source: \"" +
                      (fit_.shared_tail_source.empty() ? as_in_base() : fit_.shared_tail_source) + "\"\n"
                : std::string()) +
           (fit_.gemm_source.empty() ? std::string() : "  efficiency_source: \"" + fit_.gemm_source + "\"\n") +
           (fit_of("decode")
                ? "  memory_bound_source: \"hbm_efficiency and overhead_us: the decode fit (memory section)\"\n" +
                      fit_block("gemm", {"efficiency"})
                : fit_block("gemm", {"efficiency", "hbm_efficiency", "overhead_us"}));
  }

  std::string memory() const {
    std::string y = "memory:\n  hbm_efficiency: " + model::format_number("%.6g", p_.memory.hbm_efficiency) +
                    "\n  overhead_us: " + model::format_number("%.6g", p_.memory.overhead_s * 1e6) + "\n";
    if (const ComponentFit* decode = fit_of("decode")) {
      return y + "  source: \"fitted on " + std::to_string(decode->errors.size()) +
             " decode runs, simulated whole: every kernel of a small-batch decode step streams its weights or KV "
             "cache (also gemm.hbm_efficiency and gemm.overhead_us)\"\n" +
             fit_block("decode", {"hbm_efficiency", "overhead_us"});
    }
    const ComponentFit* gemm_fit = fit_of("gemm");
    return y + "  source: \"" +
           (gemm_fit ? std::string("fitted: the memory-bound rows of the GEMM fit") : as_in_base()) + "\"\n" +
           (gemm_fit ? "  fit:\n    values: [hbm_efficiency, overhead_us]\n    points: " +
                           std::to_string(gemm_fit->errors.size()) + "\n"
                     : fit_block("gemm", {}));
  }

  // attention.kernels: every other kernel's rates with its source.
  std::string attention_kernels() const {
    std::string kernels;
    if (!p_.attention.kernel.empty()) kernels += "  kernel: " + p_.attention.kernel + "\n";
    if (!p_.attention.kernels.empty()) kernels += "  kernels:\n";
    for (const auto& [name, rates] : p_.attention.kernels) {
      const auto source = fit_.attention_kernel_sources.find(name);
      kernels += "    " + name + ":\n      efficiency: " + model::format_number("%.6g", rates.efficiency) + "\n" +
                 (rates.backward_efficiency
                      ? "      backward_efficiency: " + model::format_number("%.6g", *rates.backward_efficiency) + "\n"
                      : std::string()) +
                 "      source: \"" + (source != fit_.attention_kernel_sources.end() ? source->second : as_in_base()) +
                 "\"\n";
    }
    return kernels;
  }

  std::string attention() const {
    const sim::AttentionParams& a = p_.attention;
    const std::string source =
        fit_.attention_source.empty()
            ? "not fitted: FlashAttention-3 (Shah et al. 2024) reports about 600 TFLOP/s causal BF16 forward on H100 "
              "SXM, head dim 128"
            : fit_.attention_source;
    std::string rates;
    if (a.fp8_efficiency) {
      rates = "  fp8_efficiency: " + model::format_number("%.6g", *a.fp8_efficiency) + "\n  fp8_source: \"" +
              (fit_.attention_fp8_source.empty() ? as_in_base() : fit_.attention_fp8_source) + "\"\n";
    }
    if (a.backward_efficiency) {
      rates += "  backward_efficiency: " + model::format_number("%.6g", *a.backward_efficiency) +
               "\n  backward_source: \"" +
               (fit_.attention_backward_source.empty() ? as_in_base() : fit_.attention_backward_source) + "\"\n";
    }
    return "attention:\n" + attention_kernels() + "  efficiency: " + model::format_number("%.6g", a.efficiency) +
           "\n  source: \"" + source + "\"\n" + rates;
  }

  std::string deepep() const {
    const std::optional<sim::DeepEpParams>& d = p_.deepep;
    if (!d) return "";
    std::string y = "deepep:\n  nvlink_efficiency: " + model::format_number("%.6g", d->nvlink_efficiency) +
                    "\n  rdma_efficiency: " + model::format_number("%.6g", d->rdma_efficiency) + "\n";
    if (const std::optional<sim::DeepEpLowLatencyParams>& l = d->low_latency) {
      y += "  low_latency:\n    dispatch_nvlink_efficiency: " +
           model::format_number("%.6g", l->dispatch_nvlink_efficiency) +
           "\n    combine_nvlink_efficiency: " + model::format_number("%.6g", l->combine_nvlink_efficiency) +
           "\n    dispatch_nvlink_latency_us: " + model::format_number("%.6g", l->dispatch_nvlink_latency_s * 1e6) +
           "\n    combine_nvlink_latency_us: " + model::format_number("%.6g", l->combine_nvlink_latency_s * 1e6) +
           "\n    rdma_efficiency: " + model::format_number("%.6g", l->rdma_efficiency) +
           "\n    rdma_latency_us: " + model::format_number("%.6g", l->rdma_latency_s * 1e6) + "\n";
    }
    return y +
           "  source: \"not fitted: DeepEP's published normal-kernel bandwidths on H800 (deepep_h800.csv) and "
           "aiconfigurator's H100 sweep of its low-latency kernels (deepep_ll_h100.csv), assumed on every GPU\"\n";
  }

  std::string linear_attention() const {
    const std::optional<sim::LinearAttentionParams>& l = p_.linear_attention;
    if (!l) return "";
    return "linear_attention:\n  efficiency: " + model::format_number("%.6g", l->efficiency) +
           "\n  chunk_step_us: " + model::format_number("%.6g", l->chunk_step_s * 1e6) +
           "\n  decode_hbm_efficiency: " + model::format_number("%.6g", l->decode_hbm_efficiency) +
           "\n  decode_overhead_us: " + model::format_number("%.6g", l->decode_overhead_s * 1e6) +
           "\n  backward_ratio: " + model::format_number("%.6g", l->backward_ratio) +
           "\n  source: \"not fitted: public Hopper timings of FLA's chunked gated delta rule and vLLM's decode "
           "kernel, and FLA's GB200 backward over forward (gated_delta_rule_hopper.csv), assumed on every GPU\"\n";
  }

  std::string sms_source() const {
    const ComponentFit* c = fit_of("nccl_sms");
    if (!c) return fit_.sms_source.empty() ? as_in_base() : fit_.sms_source;
    return "fitted on " + std::to_string(c->errors.size()) +
           " GEMMs beside collectives (overlapped GEMM time, max error " +
           model::format_number("%.1f%%", c->max_abs_error_pct) + ")";
  }

  // Points timed one call at a time through torch.distributed fit the per-call constant of the device and the host
  // together: the device's part is the base's (or NCCL's tuning constant, assumed), the host's
  // (launch.collective_host_us) the rest after launch.host_us. Points timed as the device's fit the device's part.
  std::string timed_constant() const {
    if (!fit_.call_latency_split) return "";
    return "the per-call constant, " + model::format_number("%.6g", fit_.timed_call_latency_s * 1e6) +
           " us, of collectives timed one call at a time through torch.distributed (" + fit_.call_latency_source + ")";
  }

  std::string call_latency_source() const {
    if (fit_.call_latency_split) {
      const model::Protocol protocol = fit_.call_latency_protocol;
      const std::string name = protocol == model::Protocol::kSimple  ? "Simple"
                               : protocol == model::Protocol::kLL128 ? "LL128"
                                                                     : "LL";
      return (fit_.base.empty() ? "assumed: NCCL 2.27.7's own base latency of a ring " + name +
                                      " call (src/graph/tuning.cc, baseLat), a tuning-model constant rather than a "
                                      "measured device time (points timed as graph or nccl-tests fit it)"
                                : as_in_base()) +
             ": the device's part of " + timed_constant() +
             "; launch.host_us and launch.collective_host_us are the rest";
    }
    if (!fit_.call_latency_source.empty()) return fit_.call_latency_source + ": NCCL's device time per call";
    return fit_.base.empty() ? "not fitted: 0 (it needs ring points of two step counts: all-reduces beside "
                               "all-gathers or reduce-scatters, or two rank counts)"
                             : as_in_base();
  }

  // nccl's low-latency regimes: fitted jointly with Simple (small_messages), or on points that name them.
  std::string nccl_regimes(bool simple_forced) const {
    std::string y;
    if (p_.nccl_small) {
      y += "  small_messages:\n" + transport_lines(*p_.nccl_small, "    ") + "\n    source: \"" +
           fitted_source("nccl",
                         "the same points, as the ring's low-latency regime (LL or LL128, inferred: the points do "
                         "not name a protocol; the faster regime runs)") +
           "\"\n" +
           (simple_forced && fit_of("nccl") ? fit_block("nccl", {"step_latency_us", "link_efficiency"}, "    ")
                                            : std::string());
    }
    for (const auto& [key, regime] : {std::pair{"ll", &p_.nccl_ll}, std::pair{"ll128", &p_.nccl_ll128}}) {
      if (!*regime) continue;
      const std::string name = std::string("nccl_") + key;
      y += std::string("  ") + key + ":\n" + transport_lines(**regime, "    ") + "\n    source: \"" +
           fitted_source(name,
                         "ring points run with NCCL_PROTO=" + std::string(key == std::string("ll") ? "LL" : "LL128")) +
           "\"\n" + (fit_of(name) ? fit_block(name, {"step_latency_us", "link_efficiency"}, "    ") : std::string());
    }
    return y;
  }

  // Simple from points run with NCCL_PROTO=Simple when there are some, else from the joint fit of points of unknown
  // protocol (Simple and one low-latency regime, the faster running).
  std::string nccl() const {
    const bool simple_forced = fit_of("nccl_simple") != nullptr;
    std::string y =
        "nccl:\n" + transport_lines(p_.nccl) + "\n  sms: " + std::to_string(p_.nccl_sms) +
        "\n  nvls_sms: " + std::to_string(p_.nccl_nvls_sms) + "\n  p2p_sms: " + std::to_string(p_.nccl_p2p_sms) +
        "\n  sms_source: \"" + sms_source() + "\"\n  source: \"" +
        (simple_forced
             ? fitted_source("nccl_simple", "ring points run with NCCL_PROTO=Simple")
             : fitted_source("nccl",
                             "all-gathers / reduce-scatters and all-reduces beside them, as rings (the faster regime "
                             "at large sizes, taken as Simple: the points do not name a protocol)")) +
        "\"\n";
    y += "  call_latency_us: " + model::format_number("%.6g", p_.nccl_call_latency_s * 1e6) +
         "\n  call_latency_source: \"" + call_latency_source() + "\"\n" +
         (fit_of("nccl_call_latency") && !fit_.call_latency_split
              ? fit_block("nccl_call_latency", {"call_latency_us"}, "  ", "call_latency_fit")
              : std::string());
    return y + nccl_regimes(simple_forced) +
           fit_block(simple_forced ? "nccl_simple" : "nccl", {"step_latency_us", "link_efficiency"});
  }

  std::string copy_engine() const {
    const std::string all_ranks =
        p_.copy_engine_all_ranks_efficiency
            ? "\n  all_ranks_link_efficiency: " + model::format_number("%.6g", *p_.copy_engine_all_ranks_efficiency) +
                  "\n  all_ranks_source: \"" +
                  (fit_.base.empty() ? copy_engine_all_ranks_source(p_.gpu) : as_in_base()) + "\""
            : std::string();
    return "copy_engine:\n" + transport_lines(p_.copy_engine) + all_ranks + "\n  source: \"" +
           (fit_.copy_latency_fitted ? std::string("peer copies of several sizes: step latency and efficiency")
                                     : std::string("step latency assumed (measure with real/ memcpy)")) +
           "\"\n" +
           fit_block("copy_engine", fit_.copy_latency_fitted
                                        ? std::vector<std::string>{"step_latency_us", "link_efficiency"}
                                        : std::vector<std::string>{"link_efficiency"});
  }

  // An optional transport section's setting (max_bytes, min_ranks, chunk_bytes) with its source; nvls.min_ranks
  // names the rings NCCL ran with NVLS enabled at fewer ranks.
  std::string setting_lines(const sim::TransportSection& section) const {
    const sim::TransportSection::Setting& setting = section.setting;
    if (!setting.key) return "";
    const double value = setting.get(p_);
    if (value <= setting.written_above) return "";
    std::string source = setting.source;
    if (source.empty()) {
      std::string origins;
      for (const std::string& o : fit_.nvls_declined) origins += (origins.empty() ? "" : ", ") + o;
      source = origins.empty() ? as_in_base() : "NCCL ran rings with NVLS enabled at fewer ranks: " + origins;
    }
    return "\n  " + std::string(setting.key) + ": " + model::format_number("%.0f", value) + "\n  " + setting.key +
           "_source: \"" + source + "\"";
  }

  std::string transport_section(const sim::TransportSection& section) const {
    const std::optional<sim::TransportParams>& params = p_.*section.params;
    if (!params) return "";
    return std::string(section.key) + ":\n" + transport_lines(*params) + setting_lines(section) + "\n  source: \"" +
           fitted_source(section.key, section.fitted_on) + "\"\n" +
           fit_block(section.key, {"step_latency_us", "link_efficiency"});
  }

  std::string power() const {
    if (!p_.power) return "";
    const sim::PowerParams& w = *p_.power;
    return "power:\n  measured_at_W: " + model::format_number("%.6g", w.measured_at_W) +
           "\n  measured_at_W_source: \"" +
           (fit_.power_measured_source.empty() ? as_in_base() : fit_.power_measured_source) +
           "\"\n  idle_W: " + model::format_number("%.6g", w.idle_W) + "\n  idle_W_source: \"" +
           (fit_.power_curve_source.empty() ? idle_power_source() : fit_.power_curve_source) +
           "\"\n  exponent: " + model::format_number("%.6g", w.exponent) + "\n  exponent_source: \"" +
           (fit_.power_curve_source.empty() ? power_exponent_source() : fit_.power_curve_source) +
           "\"\n  transfer_pJ_per_bit: " + model::format_number("%.6g", w.transfer_pJ_per_bit) +
           "\n  transfer_pJ_per_bit_source: \"" +
           (fit_.transfer_energy_source.empty() ? as_in_base() : fit_.transfer_energy_source) + "\"\n" +
           fit_block("transfer_energy", {"transfer_pJ_per_bit"}) +
           (fit_of("power_curve") ? fit_block("power_curve", {"idle_W", "exponent"}, "  ", "curve_fit") : "");
  }

  // Where launch's values come from: the launch chains measured, or assumed, or the base's.
  std::string launch_source() const {
    const std::string host_source =
        fit_.launch_host_fitted
            ? "host_us, stream_wait_us: chains of empty kernels launched one by one on one stream and alternating "
              "between two (tpsim-real launch)"
        : fit_.base.empty() ? "host_us assumed (eager-mode launch of one kernel or NCCL call), stream_wait_us 0 until "
                              "measured (tpsim-real launch)"
                            : "host_us, stream_wait_us as in " + fit_.base;
    const std::string gpu_source = fit_.launch_gpu_fitted
                                       ? "gpu_wait_us: the same chains queued behind a busy kernel (GPU-bound)"
                                   : fit_.base.empty() ? "gpu_wait_us 0 until measured (tpsim-real launch)"
                                                       : "gpu_wait_us as in " + fit_.base;
    return host_source + "; " + gpu_source +
           "; workload.cuda_graphs removes host_us, stream_wait_us and collective_host_us";
  }

  std::string launch() const {
    std::vector<std::string> launch_values;
    if (fit_.launch_host_fitted) launch_values = {"host_us", "stream_wait_us"};
    if (fit_.launch_gpu_fitted) launch_values.emplace_back("gpu_wait_us");
    const std::string collective_host_source =
        fit_.call_latency_split
            ? "fitted: the rest of " + timed_constant() + " after NCCL's device time per call and launch.host_us"
        : fit_.base.empty() ? torch_collective_host_source()
                            : as_in_base();
    return "launch:\n  host_us: " + model::format_number("%.6g", p_.host_launch_s * 1e6) +
           "\n  stream_wait_us: " + model::format_number("%.6g", p_.stream_wait_s * 1e6) +
           "\n  gpu_wait_us: " + model::format_number("%.6g", p_.gpu_wait_s * 1e6) +
           "\n  collective_host_us: " + model::format_number("%.6g", p_.collective_host_s * 1e6) +
           "\n  collective_host_source: \"" + collective_host_source + "\"\n  source: \"" + launch_source() + "\"\n" +
           (fit_of("launch") ? fit_block("launch", launch_values) : std::string()) +
           (fit_of("nccl_call_latency") && fit_.call_latency_split
                ? fit_block("nccl_call_latency", {"collective_host_us"}, "  ", "collective_host_fit")
                : std::string());
  }

  const ProfileFit& fit_;
  const sim::CostProfile& p_;
};

}  // namespace

std::string profile_yaml(const ProfileFit& fit, const std::string& target_gpu, const std::vector<std::string>& files) {
  return ProfileWriter(fit).write(target_gpu, files);
}

}  // namespace tpsim::calibrate
