// The profile as written (sim::WrittenProfile): every parameter, the text that says where each comes from, and each
// fit's errors, for input/profile/profile_writer.cpp to write.
#include <map>
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

const std::vector<std::string> kTransportValues = {"step_latency_us", "link_efficiency"};

// Fills one profile's record section by section, each a member below; the optional transport sections from their
// table.
class RecordBuilder {
 public:
  explicit RecordBuilder(const ProfileFit& fit) : fit_(fit), p_(fit.profile) {}

  sim::WrittenProfile build(const std::string& target_gpu, const std::vector<std::string>& files) {
    w_.profile = p_;
    header(target_gpu, files);
    gemm();
    memory();
    attention();
    deepep();
    linear_attention();
    nccl();
    copy_engine();
    for (const sim::TransportSection& section : sim::transport_sections()) {
      transport_section(section);
      if (const auto note = fit_.absent_notes.find(section.key); note != fit_.absent_notes.end()) {
        w_.notes_after[section.key] = note->second;
      }
    }
    power();
    launch();
    return w_;
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

  void text(const std::string& key, const std::string& value) { w_.texts[key] = value; }

  // The fit `name`'s record at `key` ("gemm.fit"): the values it fitted and its points' errors, or a note where
  // nothing here fitted it.
  void fit_record(const std::string& key, const std::string& name, const std::vector<std::string>& values) {
    const ComponentFit* c = fit_of(name);
    sim::FitRecord r;
    if (!c) {
      r.note = fit_.base.empty() ? "not fitted: no measurements" : "not fitted here: as in " + fit_.base;
    } else {
      r.values = values;
      r.points = c->errors.size();
      r.max_abs_error_pct = c->max_abs_error_pct;
      r.held_out_max_abs_error_pct = c->held_out_max_abs_error_pct;
      for (const PointError& e : c->errors) r.point_errors.emplace_back(e.origin, e.error_pct);
    }
    w_.fits[key] = r;
  }

  void header(const std::string& target_gpu, const std::vector<std::string>& files) {
    std::string files_text;
    for (const std::string& f : files) files_text += (files_text.empty() ? "" : " ") + f;
    w_.comments = {"Cost profile for " + target_gpu + ", written by `tpsim calibrate " + files_text + " --gpu " +
                       target_gpu + (fit_.base.empty() ? "" : " --base " + fit_.base) + "`.",
                   "Fractions of peak are relative to " + p_.gpu +
                       "'s preset; fitted values list their measurements' errors, the others say where they come "
                       "from."};
    for (const std::string& refusal : fit_.refused) w_.comments.push_back("Refused: " + refusal + ".");
    w_.gpu = target_gpu;
    w_.base = fit_.base_ref;
  }

  // gemm's fp8 and grouped rates' sources (where it has them).
  void gemm_rates() {
    if (p_.gemm.fp8_efficiency) {
      std::string source = fit_.fp8_source.empty() ? as_in_base() : fit_.fp8_source;
      if (const ComponentFit* c = fit_of("gemm_fp8")) {
        source += ", " + std::to_string(c->errors.size()) + " points, max error " +
                  model::format_number("%.1f%%", c->max_abs_error_pct) +
                  (c->held_out_max_abs_error_pct >= 0
                       ? ", held out " + model::format_number("%.1f%%", c->held_out_max_abs_error_pct)
                       : std::string());
      }
      text("gemm.fp8_source", source);
    }
    if (p_.gemm.grouped_efficiency) {
      text("gemm.grouped_source", fit_.grouped_source.empty() ? as_in_base() : fit_.grouped_source);
    }
  }

  void gemm() {
    gemm_rates();
    text("gemm.tile_source", fit_.base.empty() ? std::string(kTileSource) : as_in_base());
    if (p_.gemm.shared_tail_tiles > 0) {
      text("gemm.shared_tail_source", fit_.shared_tail_source.empty() ? as_in_base() : fit_.shared_tail_source);
    }
    if (!fit_.gemm_source.empty()) text("gemm.efficiency_source", fit_.gemm_source);
    if (fit_of("decode")) {
      text("gemm.memory_bound_source", "hbm_efficiency and overhead_us: the decode fit (memory section)");
      fit_record("gemm.fit", "gemm", {"efficiency"});
    } else {
      fit_record("gemm.fit", "gemm", {"efficiency", "hbm_efficiency", "overhead_us"});
    }
  }

  void memory() {
    if (const ComponentFit* decode = fit_of("decode")) {
      text("memory.source", "fitted on " + std::to_string(decode->errors.size()) +
                                " decode runs, simulated whole: every kernel of a small-batch decode step streams its "
                                "weights or KV cache (also gemm.hbm_efficiency and gemm.overhead_us)");
      fit_record("memory.fit", "decode", {"hbm_efficiency", "overhead_us"});
      return;
    }
    const ComponentFit* gemm_fit = fit_of("gemm");
    text("memory.source", gemm_fit ? std::string("fitted: the memory-bound rows of the GEMM fit") : as_in_base());
    if (!gemm_fit) {
      fit_record("memory.fit", "gemm", {});
      return;
    }
    sim::FitRecord r;
    r.values = {"hbm_efficiency", "overhead_us"};
    r.points = gemm_fit->errors.size();
    r.errors_listed = false;
    w_.fits["memory.fit"] = r;
  }

  void attention() {
    for (const auto& [name, rates] : p_.attention.kernels) {
      const auto source = fit_.attention_kernel_sources.find(name);
      text("attention.kernels." + name + ".source",
           source != fit_.attention_kernel_sources.end() ? source->second : as_in_base());
    }
    text("attention.source", fit_.attention_source.empty() ? fa3_forward_source() : fit_.attention_source);
    if (p_.attention.fp8_efficiency) {
      text("attention.fp8_source", fit_.attention_fp8_source.empty() ? as_in_base() : fit_.attention_fp8_source);
    }
    if (p_.attention.backward_efficiency) {
      text("attention.backward_source",
           fit_.attention_backward_source.empty() ? as_in_base() : fit_.attention_backward_source);
    }
  }

  void deepep() {
    text("deepep.source",
         "not fitted: DeepEP's published normal-kernel bandwidths on H800 (deepep_h800.csv) and aiconfigurator's H100 "
         "sweep of its low-latency kernels (deepep_ll_h100.csv), assumed on every GPU");
  }

  void linear_attention() {
    text("linear_attention.source",
         "not fitted: public Hopper timings of FLA's chunked gated delta rule and vLLM's decode kernel, and FLA's "
         "GB200 backward over forward (gated_delta_rule_hopper.csv), assumed on every GPU");
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
  void nccl_regimes(bool simple_forced) {
    if (p_.nccl_small) {
      text("nccl.small_messages.source",
           fitted_source("nccl",
                         "the same points, as the ring's low-latency regime (LL or LL128, inferred: the points do "
                         "not name a protocol; the faster regime runs)"));
      if (simple_forced && fit_of("nccl")) fit_record("nccl.small_messages.fit", "nccl", kTransportValues);
    }
    for (const auto& [key, regime] : {std::pair{"ll", &p_.nccl_ll}, std::pair{"ll128", &p_.nccl_ll128}}) {
      if (!*regime) continue;
      const std::string name = std::string("nccl_") + key;
      const std::string path = std::string("nccl.") + key;
      text(path + ".source", fitted_source(name, "ring points run with NCCL_PROTO=" +
                                                     std::string(key == std::string("ll") ? "LL" : "LL128")));
      if (fit_of(name)) fit_record(path + ".fit", name, kTransportValues);
    }
  }

  // Simple from points run with NCCL_PROTO=Simple when there are some, else from the joint fit of points of unknown
  // protocol (Simple and one low-latency regime, the faster running).
  void nccl() {
    const bool simple_forced = fit_of("nccl_simple") != nullptr;
    text("nccl.sms_source", sms_source());
    text("nccl.source",
         simple_forced
             ? fitted_source("nccl_simple", "ring points run with NCCL_PROTO=Simple")
             : fitted_source("nccl",
                             "all-gathers / reduce-scatters and all-reduces beside them, as rings (the faster regime "
                             "at large sizes, taken as Simple: the points do not name a protocol)"));
    text("nccl.call_latency_source", call_latency_source());
    if (fit_of("nccl_call_latency") && !fit_.call_latency_split) {
      fit_record("nccl.call_latency_fit", "nccl_call_latency", {"call_latency_us"});
    }
    nccl_regimes(simple_forced);
    fit_record("nccl.fit", simple_forced ? "nccl_simple" : "nccl", kTransportValues);
  }

  void copy_engine() {
    if (p_.copy_engine_all_ranks_efficiency) {
      text("copy_engine.all_ranks_source", fit_.all_ranks_source.empty() ? as_in_base() : fit_.all_ranks_source);
      if (fit_of("copy_engine_all_ranks")) {
        fit_record("copy_engine.all_ranks_fit", "copy_engine_all_ranks", {"all_ranks_link_efficiency"});
      }
    }
    text("copy_engine.source", fit_.copy_latency_fitted
                                   ? std::string("peer copies of several sizes: step latency and efficiency")
                                   : std::string("step latency assumed (measure with real/ memcpy)"));
    fit_record("copy_engine.fit", "copy_engine",
               fit_.copy_latency_fitted ? kTransportValues : std::vector<std::string>{"link_efficiency"});
  }

  // An optional transport section's setting's source (max_bytes, min_ranks, chunk_bytes); nvls.min_ranks names the
  // rings NCCL ran with NVLS enabled at fewer ranks.
  std::string setting_source(const sim::TransportSection::Setting& setting) const {
    if (*setting.source) return setting.source;
    std::string origins;
    for (const std::string& o : fit_.nvls_declined) origins += (origins.empty() ? "" : ", ") + o;
    return origins.empty() ? as_in_base() : "NCCL ran rings with NVLS enabled at fewer ranks: " + origins;
  }

  void transport_section(const sim::TransportSection& section) {
    if (!(p_.*section.params)) return;
    const std::string key = section.key;
    if (section.setting.key) text(key + "." + section.setting.key + "_source", setting_source(section.setting));
    text(key + ".source", fitted_source(section.key, section.fitted_on));
    fit_record(key + ".fit", section.key, kTransportValues);
  }

  void power() {
    text("power.measured_at_W_source", fit_.power_measured_source.empty() ? as_in_base() : fit_.power_measured_source);
    text("power.idle_W_source", fit_.power_curve_source.empty() ? idle_power_source() : fit_.power_curve_source);
    text("power.exponent_source", fit_.power_curve_source.empty() ? power_exponent_source() : fit_.power_curve_source);
    text("power.transfer_pJ_per_bit_source",
         fit_.transfer_energy_source.empty() ? as_in_base() : fit_.transfer_energy_source);
    text("power.sustained_ratio_source",
         fit_.sustained_ratio_source.empty() ? as_in_base() : fit_.sustained_ratio_source);
    fit_record("power.fit", "transfer_energy", {"transfer_pJ_per_bit"});
    if (fit_of("power_curve")) fit_record("power.curve_fit", "power_curve", {"idle_W", "exponent"});
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

  void launch() {
    std::vector<std::string> launch_values;
    if (fit_.launch_host_fitted) launch_values = {"host_us", "stream_wait_us"};
    if (fit_.launch_gpu_fitted) launch_values.emplace_back("gpu_wait_us");
    text("launch.collective_host_source",
         fit_.call_latency_split
             ? "fitted: the rest of " + timed_constant() + " after NCCL's device time per call and launch.host_us"
         : fit_.base.empty() ? torch_collective_host_source()
                             : as_in_base());
    text("launch.source", launch_source());
    if (fit_of("launch")) fit_record("launch.fit", "launch", launch_values);
    if (fit_of("nccl_call_latency") && fit_.call_latency_split) {
      fit_record("launch.collective_host_fit", "nccl_call_latency", {"collective_host_us"});
    }
  }

  const ProfileFit& fit_;
  const sim::CostProfile& p_;
  sim::WrittenProfile w_;
};

}  // namespace

sim::WrittenProfile profile_record(const ProfileFit& fit, const std::string& target_gpu,
                                   const std::vector<std::string>& files) {
  return RecordBuilder(fit).build(target_gpu, files);
}

}  // namespace tpsim::calibrate
