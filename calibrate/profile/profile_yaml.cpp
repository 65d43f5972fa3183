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

}  // namespace

std::string profile_yaml(const ProfileFit& fit, const std::string& target_gpu, const std::vector<std::string>& files) {
  const sim::CostProfile& p = fit.profile;
  std::string files_text;
  for (const std::string& f : files) files_text += (files_text.empty() ? "" : " ") + f;
  std::string y = "# Cost profile for " + target_gpu + ", written by `tpsim calibrate " + files_text + " --gpu " +
                  target_gpu + (fit.base.empty() ? "" : " --base " + fit.base) +
                  "`.\n# Fractions of peak are relative to " + fit.profile.gpu +
                  "'s preset; fitted values list their measurements' errors, the others say where they come from.\n";
  for (const std::string& refusal : fit.refused) y += "# Refused: " + refusal + ".\n";
  y += "gpu: " + target_gpu + "\n";
  if (!fit.base_ref.empty()) y += "base: " + fit.base_ref + "\n";
  const auto fit_of = [&](const std::string& name) -> const ComponentFit* {
    for (const ComponentFit& c : fit.fits) {
      if (c.name == name) return &c;
    }
    return nullptr;
  };
  // A section's source: what fitted it and how its points' algorithm is known, or where it comes from.
  const auto fitted_source = [&](const std::string& name, const std::string& what) {
    const ComponentFit* c = fit_of(name);
    if (!c) return fit.base.empty() ? std::string("not fitted: no measurements") : "as in " + fit.base;
    return "fitted on " + what + (c->basis.empty() ? "" : " (" + c->basis + ")");
  };
  // A section's fit: the values it fitted and its points' errors, `indent` deep (a section inside a
  // section: 4 spaces).
  const auto fit_block = [&](const std::string& name, const std::vector<std::string>& values,
                             const std::string& indent = "  ", const std::string& key = "fit") {
    const ComponentFit* c = fit_of(name);
    if (!c && !fit.base.empty()) return indent + key + ": \"not fitted here: as in " + fit.base + "\"\n";
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
  };
  const auto sms_source = [&]() -> std::string {
    const ComponentFit* c = fit_of("nccl_sms");
    if (!c) return fit.sms_source.empty() ? "as in " + fit.base : fit.sms_source;
    return "fitted on " + std::to_string(c->errors.size()) +
           " GEMMs beside collectives (overlapped GEMM time, max error " +
           model::format_number("%.1f%%", c->max_abs_error_pct) + ")";
  };
  const ComponentFit* decode = fit_of("decode");
  std::string fp8;
  if (p.gemm.fp8_efficiency) {
    std::string source = fit.fp8_source.empty() ? "as in " + fit.base : fit.fp8_source;
    if (const ComponentFit* c = fit_of("gemm_fp8")) {
      source += ", " + std::to_string(c->errors.size()) + " points, max error " +
                model::format_number("%.1f%%", c->max_abs_error_pct) +
                (c->held_out_max_abs_error_pct >= 0
                     ? ", held out " + model::format_number("%.1f%%", c->held_out_max_abs_error_pct)
                     : std::string());
    }
    fp8 = "\n  fp8_efficiency: " + model::format_number("%.6g", *p.gemm.fp8_efficiency) + "\n  fp8_source: \"" +
          source + "\"";
  }
  if (p.gemm.grouped_efficiency) {
    fp8 += "\n  grouped_efficiency: " + model::format_number("%.6g", *p.gemm.grouped_efficiency) +
           "\n  grouped_source: \"" + (fit.grouped_source.empty() ? "as in " + fit.base : fit.grouped_source) + "\"";
  }
  y += "gemm:\n  efficiency: " + model::format_number("%.6g", p.gemm.efficiency) + fp8 +
       "\n  hbm_efficiency: " + model::format_number("%.6g", p.gemm.hbm_efficiency) +
       "\n  overhead_us: " + model::format_number("%.6g", p.gemm.overhead_s * 1e6) +
       "\n  tile_m: " + std::to_string(p.gemm.tile_m) + "\n  tile_n: " + std::to_string(p.gemm.tile_n) +
       "\n  small_m_tile_m: " + std::to_string(p.gemm.small_m_tile_m) +
       "\n  min_k_per_split: " + std::to_string(p.gemm.min_k_per_split) + "\n  tile_source: \"" +
       (fit.base.empty() ? std::string(kTileSource) : "as in " + fit.base) + "\"\n" +
       (p.gemm.shared_tail_tiles > 0
            ? "  shared_tail_tiles: " + model::format_number("%.6g", p.gemm.shared_tail_tiles) +
                  "\n  shared_tail_source: \"" +
                  (fit.shared_tail_source.empty() ? "as in " + fit.base : fit.shared_tail_source) + "\"\n"
            : std::string()) +
       (fit.gemm_source.empty() ? std::string() : "  efficiency_source: \"" + fit.gemm_source + "\"\n") +
       (decode ? "  memory_bound_source: \"hbm_efficiency and overhead_us: the decode fit (memory section)\"\n" +
                     fit_block("gemm", {"efficiency"})
               : fit_block("gemm", {"efficiency", "hbm_efficiency", "overhead_us"}));
  y += "memory:\n  hbm_efficiency: " + model::format_number("%.6g", p.memory.hbm_efficiency) +
       "\n  overhead_us: " + model::format_number("%.6g", p.memory.overhead_s * 1e6) + "\n";
  if (decode) {
    y += "  source: \"fitted on " + std::to_string(decode->errors.size()) +
         " decode runs, simulated whole: every kernel of a small-batch decode step streams its weights or KV "
         "cache (also gemm.hbm_efficiency and gemm.overhead_us)\"\n" +
         fit_block("decode", {"hbm_efficiency", "overhead_us"});
  } else {
    y += "  source: \"" +
         (fit_of("gemm") ? std::string("fitted: the memory-bound rows of the GEMM fit") : "as in " + fit.base) +
         "\"\n" +
         (fit_of("gemm") ? "  fit:\n    values: [hbm_efficiency, overhead_us]\n    points: " +
                               std::to_string(fit_of("gemm")->errors.size()) + "\n"
                         : fit_block("gemm", {}));
  }
  const std::string attention_source =
      fit.attention_source.empty() ? "not fitted: FlashAttention-3 (Shah et al. 2024) reports about 600 TFLOP/s causal "
                                     "BF16 forward on H100 SXM, head dim 128"
                                   : fit.attention_source;
  std::string attention_fp8;
  if (p.attention.fp8_efficiency) {
    attention_fp8 = "  fp8_efficiency: " + model::format_number("%.6g", *p.attention.fp8_efficiency) +
                    "\n  fp8_source: \"" +
                    (fit.attention_fp8_source.empty() ? "as in " + fit.base : fit.attention_fp8_source) + "\"\n";
  }
  if (p.attention.backward_efficiency) {
    attention_fp8 += "  backward_efficiency: " + model::format_number("%.6g", *p.attention.backward_efficiency) +
                     "\n  backward_source: \"" +
                     (fit.attention_backward_source.empty() ? "as in " + fit.base : fit.attention_backward_source) +
                     "\"\n";
  }
  std::string kernels;
  if (!p.attention.kernel.empty()) kernels += "  kernel: " + p.attention.kernel + "\n";
  if (!p.attention.kernels.empty()) kernels += "  kernels:\n";
  for (const auto& [name, rates] : p.attention.kernels) {
    const auto source = fit.attention_kernel_sources.find(name);
    kernels += "    " + name + ":\n      efficiency: " + model::format_number("%.6g", rates.efficiency) + "\n" +
               (rates.backward_efficiency
                    ? "      backward_efficiency: " + model::format_number("%.6g", *rates.backward_efficiency) + "\n"
                    : std::string()) +
               "      source: \"" +
               (source != fit.attention_kernel_sources.end() ? source->second : "as in " + fit.base) + "\"\n";
  }
  y += "attention:\n" + kernels + "  efficiency: " + model::format_number("%.6g", p.attention.efficiency) +
       "\n  source: \"" + attention_source + "\"\n" + attention_fp8;
  if (const std::optional<sim::DeepEpParams>& d = p.deepep) {
    y += "deepep:\n  nvlink_efficiency: " + model::format_number("%.6g", d->nvlink_efficiency) +
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
    y += "  source: \"not fitted: DeepEP's published normal-kernel bandwidths on H800 (deepep_h800.csv) and "
         "aiconfigurator's H100 sweep of its low-latency kernels (deepep_ll_h100.csv), assumed on every GPU\"\n";
  }
  if (const std::optional<sim::LinearAttentionParams>& l = p.linear_attention) {
    y += "linear_attention:\n  efficiency: " + model::format_number("%.6g", l->efficiency) +
         "\n  chunk_step_us: " + model::format_number("%.6g", l->chunk_step_s * 1e6) +
         "\n  decode_hbm_efficiency: " + model::format_number("%.6g", l->decode_hbm_efficiency) +
         "\n  decode_overhead_us: " + model::format_number("%.6g", l->decode_overhead_s * 1e6) +
         "\n  backward_ratio: " + model::format_number("%.6g", l->backward_ratio) +
         "\n  source: \"not fitted: public Hopper timings of FLA's chunked gated delta rule and vLLM's decode kernel, "
         "and FLA's GB200 backward over forward (gated_delta_rule_hopper.csv), assumed on every GPU\"\n";
  }
  // Simple from points run with NCCL_PROTO=Simple when there are some, else from the joint fit of
  // points of unknown protocol (Simple and one low-latency regime, the faster running).
  const bool simple_forced = fit_of("nccl_simple") != nullptr;
  y += "nccl:\n" + transport_lines(p.nccl) + "\n  sms: " + std::to_string(p.nccl_sms) +
       "\n  nvls_sms: " + std::to_string(p.nccl_nvls_sms) + "\n  p2p_sms: " + std::to_string(p.nccl_p2p_sms) +
       "\n  sms_source: \"" + sms_source() + "\"\n  source: \"" +
       (simple_forced ? fitted_source("nccl_simple", "ring points run with NCCL_PROTO=Simple")
                      : fitted_source("nccl",
                                      "all-gathers / reduce-scatters and all-reduces beside them, as rings (the faster "
                                      "regime at large sizes, taken as Simple: the points do not name a protocol)")) +
       "\"\n";
  // Points timed one call at a time through torch.distributed fit the per-call constant of the device and the host
  // together: the device's part is the base's (or NCCL's tuning constant, assumed), the host's
  // (launch.collective_host_us) the rest after launch.host_us. Points timed as the device's fit the device's part.
  const std::string timed_constant =
      fit.call_latency_split
          ? "the per-call constant, " + model::format_number("%.6g", fit.timed_call_latency_s * 1e6) +
                " us, of collectives timed one call at a time through torch.distributed (" + fit.call_latency_source +
                ")"
          : std::string();
  const std::string call_source =
      fit.call_latency_split
          ? (fit.base.empty() ? "assumed: NCCL 2.27.7's own base latency of a ring " +
                                    std::string(fit.call_latency_protocol == model::Protocol::kSimple  ? "Simple"
                                                : fit.call_latency_protocol == model::Protocol::kLL128 ? "LL128"
                                                                                                       : "LL") +
                                    " call (src/graph/tuning.cc, baseLat), a tuning-model constant rather than a "
                                    "measured device time (points timed as graph or nccl-tests fit it)"
                              : "as in " + fit.base) +
                ": the device's part of " + timed_constant +
                "; launch.host_us and launch.collective_host_us are the rest"
      : !fit.call_latency_source.empty() ? fit.call_latency_source + ": NCCL's device time per call"
      : fit.base.empty() ? "not fitted: 0 (it needs ring points of two step counts: all-reduces beside all-gathers "
                           "or reduce-scatters, or two rank counts)"
                         : "as in " + fit.base;
  y += "  call_latency_us: " + model::format_number("%.6g", p.nccl_call_latency_s * 1e6) +
       "\n  call_latency_source: \"" + call_source + "\"\n" +
       (fit_of("nccl_call_latency") && !fit.call_latency_split
            ? fit_block("nccl_call_latency", {"call_latency_us"}, "  ", "call_latency_fit")
            : std::string());
  if (p.nccl_small) {
    y += "  small_messages:\n" + transport_lines(*p.nccl_small, "    ") + "\n    source: \"" +
         fitted_source("nccl",
                       "the same points, as the ring's low-latency regime (LL or LL128, inferred: the points do not "
                       "name a protocol; the faster regime runs)") +
         "\"\n" +
         (simple_forced && fit_of("nccl") ? fit_block("nccl", {"step_latency_us", "link_efficiency"}, "    ")
                                          : std::string());
  }
  for (const auto& [key, regime] : {std::pair{"ll", &p.nccl_ll}, std::pair{"ll128", &p.nccl_ll128}}) {
    if (!*regime) continue;
    const std::string name = std::string("nccl_") + key;
    y += std::string("  ") + key + ":\n" + transport_lines(**regime, "    ") + "\n    source: \"" +
         fitted_source(name,
                       "ring points run with NCCL_PROTO=" + std::string(key == std::string("ll") ? "LL" : "LL128")) +
         "\"\n" + (fit_of(name) ? fit_block(name, {"step_latency_us", "link_efficiency"}, "    ") : std::string());
  }
  y += fit_block(simple_forced ? "nccl_simple" : "nccl", {"step_latency_us", "link_efficiency"});
  const std::string all_ranks =
      p.copy_engine_all_ranks_efficiency
          ? "\n  all_ranks_link_efficiency: " + model::format_number("%.6g", *p.copy_engine_all_ranks_efficiency) +
                "\n  all_ranks_source: \"" +
                (fit.base.empty() ? copy_engine_all_ranks_source(p.gpu) : "as in " + fit.base) + "\""
          : std::string();
  y += "copy_engine:\n" + transport_lines(p.copy_engine) + all_ranks + "\n  source: \"" +
       (fit.copy_latency_fitted ? std::string("peer copies of several sizes: step latency and efficiency")
                                : std::string("step latency assumed (measure with real/ memcpy)")) +
       "\"\n" +
       fit_block("copy_engine", fit.copy_latency_fitted ? std::vector<std::string>{"step_latency_us", "link_efficiency"}
                                                        : std::vector<std::string>{"link_efficiency"});
  if (p.one_shot) {
    y += "one_shot:\n" + transport_lines(*p.one_shot) +
         "\n  max_bytes: " + model::format_number("%.0f", p.one_shot_max_bytes) +
         "\n  max_bytes_source: \"vLLM's custom all-reduce default limit of 8 MiB\"\n  source: \"" +
         fitted_source("one_shot", "all-reduces run as one-shot custom kernels") + "\"\n" +
         fit_block("one_shot", {"step_latency_us", "link_efficiency"});
  }
  if (p.two_shot) {
    y += "two_shot:\n" + transport_lines(*p.two_shot) +
         "\n  max_bytes: " + model::format_number("%.0f", p.two_shot_max_bytes) +
         "\n  max_bytes_source: \"as one_shot's: vLLM's custom all-reduce default limit of 8 MiB\"\n  source: \"" +
         fitted_source("two_shot", "all-reduces run as two-shot custom kernels") + "\"\n" +
         fit_block("two_shot", {"step_latency_us", "link_efficiency"});
  }
  if (p.nvls) {
    std::string min_ranks;
    if (p.nvls_min_ranks > 2) {
      std::string origins;
      for (const std::string& o : fit.nvls_declined) origins += (origins.empty() ? "" : ", ") + o;
      min_ranks =
          "\n  min_ranks: " + std::to_string(p.nvls_min_ranks) + "\n  min_ranks_source: \"" +
          (origins.empty() ? "as in " + fit.base : "NCCL ran rings with NVLS enabled at fewer ranks: " + origins) +
          "\"";
    }
    y += "nvls:\n" + transport_lines(*p.nvls) + min_ranks + "\n  source: \"" +
         fitted_source("nvls", "all-reduces run as NVLS") + "\"\n" +
         fit_block("nvls", {"step_latency_us", "link_efficiency"});
  }
  if (!fit.nvls_absent.empty()) y += "# no nvls section: " + fit.nvls_absent + "\n";
  if (p.multimem) {
    y += "multimem:\n" + transport_lines(*p.multimem) + "\n  source: \"" +
         fitted_source("multimem",
                       "all-reduces run as symmetric-memory multicast kernels (multimem.ld_reduce, then multimem.st, "
                       "through NVSwitch; no NCCL call)") +
         "\"\n" + fit_block("multimem", {"step_latency_us", "link_efficiency"});
  }
  if (p.multimem_gather) {
    y += "multimem_gather:\n" + transport_lines(*p.multimem_gather) + "\n  source: \"" +
         fitted_source("multimem_gather",
                       "all-gathers (multimem.st) and reduce-scatters (multimem.ld_reduce) run as symmetric-memory "
                       "multicast kernels") +
         "\"\n" + fit_block("multimem_gather", {"step_latency_us", "link_efficiency"});
  }
  if (!fit.multimem_absent.empty()) y += "# no multimem sections: " + fit.multimem_absent + "\n";
  if (p.network) {
    y +=
        "network:\n" + transport_lines(*p.network) + "\n  source: \"" +
        fitted_source("network",
                      "all-reduces across nodes as rings: each step's hop between nodes, striped over every NIC of the "
                      "node") +
        "\"\n" + fit_block("network", {"step_latency_us", "link_efficiency"});
  }
  if (p.tree) {
    y += "tree:\n" + transport_lines(*p.tree) + "\n  chunk_bytes: " + model::format_number("%.0f", p.tree_chunk_bytes) +
         "\n  chunk_bytes_source: \"assumed: NCCL's 4 MiB buffer over 8 steps, 8 channels\"\n  source: \"" +
         fitted_source("tree", "all-reduces run as NCCL's tree (every hop, NVLink and NIC)") + "\"\n" +
         fit_block("tree", {"step_latency_us", "link_efficiency"});
  }
  if (p.power) {
    y += "power:\n  measured_at_W: " + model::format_number("%.6g", p.power->measured_at_W) +
         "\n  measured_at_W_source: \"" +
         (fit.power_measured_source.empty() ? "as in " + fit.base : fit.power_measured_source) +
         "\"\n  idle_W: " + model::format_number("%.6g", p.power->idle_W) + "\n  idle_W_source: \"" +
         (fit.power_curve_source.empty() ? idle_power_source() : fit.power_curve_source) +
         "\"\n  exponent: " + model::format_number("%.6g", p.power->exponent) + "\n  exponent_source: \"" +
         (fit.power_curve_source.empty() ? power_exponent_source() : fit.power_curve_source) +
         "\"\n  transfer_pJ_per_bit: " + model::format_number("%.6g", p.power->transfer_pJ_per_bit) +
         "\n  transfer_pJ_per_bit_source: \"" +
         (fit.transfer_energy_source.empty() ? "as in " + fit.base : fit.transfer_energy_source) + "\"\n" +
         fit_block("transfer_energy", {"transfer_pJ_per_bit"}) +
         (fit_of("power_curve") ? fit_block("power_curve", {"idle_W", "exponent"}, "  ", "curve_fit") : "");
  }
  const ComponentFit* launch_fit = fit_of("launch");
  std::vector<std::string> launch_values;
  if (fit.launch_host_fitted) launch_values = {"host_us", "stream_wait_us"};
  if (fit.launch_gpu_fitted) launch_values.emplace_back("gpu_wait_us");
  const std::string host_source =
      fit.launch_host_fitted
          ? "host_us, stream_wait_us: chains of empty kernels launched one by one on one stream and alternating "
            "between two (tpsim-real launch)"
      : fit.base.empty() ? "host_us assumed (eager-mode launch of one kernel or NCCL call), stream_wait_us 0 until "
                           "measured (tpsim-real launch)"
                         : "host_us, stream_wait_us as in " + fit.base;
  const std::string gpu_source = fit.launch_gpu_fitted ? "gpu_wait_us: the same chains queued behind a busy kernel "
                                                         "(GPU-bound)"
                                 : fit.base.empty()    ? "gpu_wait_us 0 until measured (tpsim-real launch)"
                                                       : "gpu_wait_us as in " + fit.base;
  const std::string collective_host_source =
      fit.call_latency_split
          ? "fitted: the rest of " + timed_constant + " after NCCL's device time per call and launch.host_us"
      : fit.base.empty() ? torch_collective_host_source()
                         : "as in " + fit.base;
  y += "launch:\n  host_us: " + model::format_number("%.6g", p.host_launch_s * 1e6) +
       "\n  stream_wait_us: " + model::format_number("%.6g", p.stream_wait_s * 1e6) +
       "\n  gpu_wait_us: " + model::format_number("%.6g", p.gpu_wait_s * 1e6) +
       "\n  collective_host_us: " + model::format_number("%.6g", p.collective_host_s * 1e6) +
       "\n  collective_host_source: \"" + collective_host_source + "\"\n  source: \"" + host_source + "; " +
       gpu_source + "; workload.cuda_graphs removes host_us, stream_wait_us and collective_host_us\"\n" +
       (launch_fit ? fit_block("launch", launch_values) : std::string()) +
       (fit_of("nccl_call_latency") && fit.call_latency_split
            ? fit_block("nccl_call_latency", {"collective_host_us"}, "  ", "collective_host_fit")
            : std::string());
  return y;
}

}  // namespace tpsim::calibrate
