// Groups measurements by what they calibrate, runs each fitter, and measures every fit's error.
#include "calibrate/profile/profile_fit.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "base/input_error.hpp"
#include "base/units.hpp"
#include "calibrate/fits/causal_mask_fit.hpp"
#include "calibrate/fits/component_fits.hpp"
#include "calibrate/fits/fit_measure.hpp"
#include "calibrate/fits/power_curve_fit.hpp"
#include "calibrate/fits/ring_fit.hpp"
#include "calibrate/fits/shared_tail_fit.hpp"
#include "calibrate/fits/transfer_energy_fit.hpp"
#include "calibrate/profile/power_curve.hpp"
#include "calibrate/validation/composite_model.hpp"

namespace tpsim::calibrate {
namespace {

// Assumed where no measurement exists (stated in the profile): a copy-engine step's latency and
// the host time per launched op.
constexpr double kAssumedCopyEngineStepLatency_s = 3e-6;
constexpr double kAssumedHostLaunch_s = 4e-6;
// Not fitted (no attention measurement): FlashAttention-3 (Shah et al. 2024) on H100 SXM reaches close
// to 1.2 PFLOP/s in fp8 at its best, 740 TFLOP/s in bf16 at its best and about 600 causal (its Fig. 5d: 602 at 8k
// tokens): the fp8 best times that causal-to-best ratio, over H100's dense fp8 peak of 1978.9 TFLOP/s; one rate at
// every length.
constexpr double kFa3Fp8Efficiency = 1200.0 / 1978.9 * (600.0 / 740.0);
constexpr const char* kFa3Fp8Source =
    "not fitted: FlashAttention-3 (Shah et al. 2024) reaches close to 1.2 PFLOP/s in fp8 on H100 SXM at its best; x "
    "600 / 740, its bf16 causal-to-best ratio, over the 1978.9 TFLOP/s fp8 peak";

// Not fitted: FlashAttention-3's backward (Shah et al. 2024, backward speed, head dim 128, H100 SXM5)
// runs at 501 TFLOP/s at 2k tokens and 542 at 4k, counting 2.5 times the forward's FLOPs: about 500 of
// the 989.4 TFLOP/s bf16 peak.
constexpr double kFa3BackwardEfficiency = 500.0 / 989.4;
constexpr const char* kFa3BackwardSource =
    "not fitted: FlashAttention-3 (Shah et al. 2024) backward, head dim 128 on H100 SXM: about 500 TFLOP/s at 2k "
    "tokens (501; 542 at 4k), of the 989.4 TFLOP/s bf16 peak";

// Not fitted: the attention kernels on H100 SXM in the FlashAttention-3 paper (Shah et al. 2024, Figures 5c and 6b,
// head dim 128, 16k tokens in all, clock fixed at 1830 MHz): forward without a mask at 8k-16k (the mean of the two
// bars) and backward (published without the causal mask only), of the 989.4 TFLOP/s bf16 peak. Each kernel's causal
// forward (Fig. 5d) is fitted over its lengths (published_causal_forward), its causal backward's cost likewise
// (published_causal_backward).
constexpr double kH100SxmPeakTflops = 989.4;
constexpr double kFa3UnmaskedEfficiency = (646.0 + 648.0) / 2.0 / kH100SxmPeakTflops;
constexpr double kFa2UnmaskedEfficiency = 370.0 / kH100SxmPeakTflops;
constexpr double kFa2BackwardEfficiency = 322.0 / kH100SxmPeakTflops;
constexpr double kCudnnUnmaskedEfficiency = (600.0 + 595.0) / 2.0 / kH100SxmPeakTflops;
constexpr double kCudnnBackwardEfficiency = 516.0 / kH100SxmPeakTflops;
constexpr const char* kFa2Rates =
    "not fitted: FlashAttention-2 (2.5.8) on H100 SXM in the FlashAttention-3 paper (Shah et al. 2024, Fig. 5c and "
    "6b, head dim 128): 370 TFLOP/s forward without a mask at 8k-16k tokens, 322 backward (non-causal)";
constexpr const char* kCudnnRates =
    "not fitted: cuDNN 9.1 fused attention on H100 SXM in the FlashAttention-3 paper (Shah et al. 2024, Fig. 5c and "
    "6b, head dim 128): 595-600 TFLOP/s forward without a mask at 8k-16k tokens, 516 backward (non-causal)";
constexpr const char* kFa3Rates =
    "not fitted: FlashAttention-3 (Shah et al. 2024) on H100 SXM, head dim 128: 646-648 TFLOP/s forward without a "
    "mask at 8k-16k tokens (Fig. 5c)";

// A shipped kernel's causal forward fitted on the paper's Fig. 5d: its efficiency (the rate over long sequences)
// and forward_causal_tokens.
void set_causal_forward(const std::string& kernel, double& efficiency, double& tokens) {
  const CausalForwardFit fit = fit_causal_forward(published_causal_forward(kernel).points);
  efficiency = fit.long_tflops / kH100SxmPeakTflops;
  tokens = fit.tokens;
}

// A shipped kernel's source: its published rates, then its fitted causal forward and backward.
std::string kernel_source(const std::string& kernel, const char* rates) {
  return rates + causal_forward_source(published_causal_forward(kernel)) +
         causal_tokens_source(published_causal_backward(kernel));
}

// The rate of a copy-engine pull while every rank of the group pulls at once, as the h100-sxm profile fits it on
// TorchTitan's published async-TP trace (its pull of one shard back to back, async_tp_trace_pulls.jsonl): carried to
// profiles fitted without such pulls, marked so; a test refits it.
constexpr double kCopyEngineAllRanksEfficiency = 0.60438;
constexpr const char* kCopyEngineAllRanksOrigin =
    "the h100-sxm fit on TorchTitan's async-TP trace: one 268,435,456-byte shard pulled back to back in 0.99 ms "
    "(+-0.07 read off the screenshot) while all 8 ranks pull (calibrate/data/measurements/async_tp_trace_pulls.jsonl)";

// Where kH200SharedTailTiles (shared_tail_fit.hpp) comes from, in profiles fitted without such points.
constexpr const char* kSharedTailOrigin =
    "the h200-sxm fit on our H200 GEMMs beside a copy kernel holding 4-132 SMs first "
    "(real/results/h200-2026-12-04/overlap_partner_first: 24 points, max error 7.8%)";

// NCCL's channels (one CTA, so one SM, each) on this GPU's node, and where the counts come from.
void source_nccl_channels(const sim::GpuSpec& gpu, ProfileFit& out) {
  sim::CostProfile& p = out.profile;
  const std::string code =
      "NVIDIA/nccl: rings and trees on the channels the topology search finds, doubled (src/graph/connect.cc), "
      "fewer below 32 KiB per channel (src/enqueue.cc); NVLS 16 channels on SM90 (src/transport/nvls.cc "
      "NVLS_NCHANNELS_SM90); point-to-point the ring count rounded up to a power of two (src/graph/paths.cc)";
  if (gpu.name == "h800-sxm") {
    p.nccl_sms = p.nccl_nvls_sms = p.nccl_p2p_sms = 16;
    out.sms_source = "sourced: " + code +
                     "; H800's 8 NVLinks: '16 coll channels, 0 nvls channels, 16 p2p channels' (NVIDIA/nccl#892)";
    return;
  }
  p.nccl_sms = 24;
  p.nccl_nvls_sms = 16;
  p.nccl_p2p_sms = 32;
  const bool logged = gpu.compute_capability >= 90 ? gpu.nvswitch && gpu.sm_count >= 132 : gpu.nvswitch;
  out.sms_source = (logged ? "sourced: " : "assumed as on H100: ") + code +
                   "; 8 H100 SXM log '24 coll channels, 24 collnet channels, 16 nvls channels, 32 p2p channels' "
                   "(NCCL 2.2x), HGX A100 rings on 24 channels (NVIDIA/nccl-tests#100)";
}

// Whether a ring all-reduce would run the profile's low-latency regime (faster there than Simple).
bool runs_low_latency_regime(const Measurement& m, const sim::GpuSpec& gpu, const sim::CostProfile& profile) {
  if (!profile.nccl_small) return false;
  const RingSample s{m.ranks, m.bytes, m.median_s, sim::ring_step_count(model::CollectiveKind::kAllReduce, m.ranks)};
  return ring_seconds(*profile.nccl_small, s, gpu.nvlink_Bps) < ring_seconds(profile.nccl, s, gpu.nvlink_Bps);
}

using Points = std::vector<const Measurement*>;

// The measurements by the fit that takes them.
struct PointsByFit {
  Points all_gemms, gemms, fp8_gemms, copies, all_ranks_pulls, trees, overlaps, copy_overlaps, launches,
      shared_tail_points;
  // The points of each optional transport section fitted on one algorithm (sim::transport_sections()).
  std::map<std::string, Points> section_points;
  // Ring all-gathers / reduce-scatters, any rank count: of unknown protocol, and by the protocol forced.
  Points rings;
  std::map<std::string, Points> forced_rings;
  // Ring all-reduces of unknown protocol: beside the all-gathers they tell the call latency from the
  // per-step latency (twice the steps); alone they fit the call latency.
  Points ring_reduces;
  // Multi-node ring all-reduces, by (GPU, ranks, nodes, NIC): one system per fit.
  std::map<std::tuple<std::string, int, int, double>, Points> network;
  int declined_ranks = 0;  // the most ranks NCCL ran a ring on with NVLS enabled
};

// Sorts the measurements by fit; counts the points of other GPUs and the rings NCCL ran with NVLS enabled.
PointsByFit sort_points(const std::vector<Measurement>& measurements, const sim::GpuSpec& gpu, ProfileFit& out) {
  PointsByFit points;
  for (const Measurement& m : measurements) {
    if (!m.correct) continue;          // a point that failed its correctness check calibrates nothing
    if (m.kind == "decode") continue;  // fitted on the target GPU after a transfer (calibrate/fits/decode_fit.hpp)
    if (m.kind == "collective" && m.collective == "allreduce" && m.algorithm == "tree") {
      // Its hops run on NVLink inside nodes: this GPU's points only.
      if (m.gpu == gpu.name) {
        points.trees.push_back(&m);
      } else {
        ++out.other_gpu_points;
      }
      continue;
    }
    if (m.nodes > 1) {
      if (m.collective == "allreduce" && (m.algorithm == "ring" || m.algorithm == "unknown")) {
        points.network[{m.gpu, m.ranks, m.nodes, m.nic_GBps}].push_back(&m);
      }
      continue;  // nothing inside one node is fitted on points across nodes
    }
    if (m.gpu != gpu.name) {
      ++out.other_gpu_points;
      continue;
    }
    if (m.details.value("nvls_declined", false)) {
      points.declined_ranks = std::max(points.declined_ranks, m.ranks);
      out.nvls_declined.push_back(m.origin);
    }
    if (m.kind == "gemm") points.all_gemms.push_back(&m);
    // GEMMs capped below the GPU's power limit tell the power curve, not the compute rate at the limit.
    const bool rate_point = m.kind == "gemm" && !ran_below_power_limit(m, gpu);
    if (rate_point && m.dtype == "bf16") points.gemms.push_back(&m);
    if (rate_point && m.dtype == "fp8") points.fp8_gemms.push_back(&m);
    if (m.kind == "overlap" && model::collective_kind_named(m.pattern)) points.overlaps.push_back(&m);
    if (m.kind == "overlap" && m.pattern == "memcpy_peer") points.copy_overlaps.push_back(&m);
    if (is_partner_first_copy_kernel(m)) points.shared_tail_points.push_back(&m);
    if (m.kind == "launch") points.launches.push_back(&m);
    if (m.kind == "memcpy" && m.path == "peer") points.copies.push_back(&m);
    if (m.kind == "memcpy" && m.path == "peer_all_ranks") points.all_ranks_pulls.push_back(&m);
    if (m.kind != "collective") continue;
    const bool gather_or_scatter = m.collective == "allgather" || m.collective == "reducescatter";
    if (gather_or_scatter && (m.algorithm == "ring" || m.algorithm == "unknown")) {
      (m.protocol == "unknown" ? points.rings : points.forced_rings[m.protocol]).push_back(&m);
    }
    if (m.collective == "allreduce" && m.algorithm == "ring") {
      (m.protocol == "unknown" ? points.ring_reduces : points.forced_rings[m.protocol]).push_back(&m);
    }
    for (const sim::TransportSection& section : sim::transport_sections()) {
      if (*section.algorithm == '\0' || m.algorithm != section.algorithm) continue;
      if (section.gathers ? gather_or_scatter : m.collective == "allreduce")
        points.section_points[section.key].push_back(&m);
    }
  }
  return points;
}

// The compute sections: the power curve, GEMM rates (bf16, fp8, grouped), the attention kernels, the GEMM's tail
// beside a comm kernel, and what follows from them (linear attention, DeepEP).
void fit_compute(const PointsByFit& points, const sim::GpuSpec& gpu, const sim::CostProfile* base, ProfileFit& out) {
  if (!base || (!points.gemms.empty() && out.profile.power)) {  // compute rates fitted here: at this GPU's limit
    out.profile.power = assumed_power_curve(gpu, gpu.power_limit_W, out.profile.power);
    out.power_measured_source = "assumed: the power limit of " + gpu.name +
                                " (its preset's), which the compute measurements' sources do not state";
    out.transfer_energy_source = assumed_transfer_energy_source(gpu);
    out.sustained_ratio_source = sustained_ratio_source(gpu);
  }
  if (!points.gemms.empty()) {
    const std::optional<double> kept_fp8 = out.profile.gemm.fp8_efficiency;
    fit_gemms(points.gemms, gpu, out);
    out.profile.gemm.fp8_efficiency = kept_fp8;
  } else {
    out.not_fitted.push_back("gemm");
  }
  fit_power_curve(points.all_gemms, gpu, out);
  if (!base) {
    sim::AttentionParams& a = out.profile.attention;
    a.backward_efficiency = kFa3BackwardEfficiency;
    const auto causal_tokens = [](const char* kernel) {
      return fit_causal_tokens(published_causal_backward(kernel).points).tokens;
    };
    a.backward_causal_tokens = causal_tokens("fa3");
    out.attention_backward_source = kFa3BackwardSource + causal_tokens_source(published_causal_backward("fa3"));
    a.kernel = "fa3";
    set_causal_forward("fa3", a.efficiency, a.forward_causal_tokens);
    a.unmasked_efficiency = kFa3UnmaskedEfficiency;
    out.attention_source = fa3_forward_source();
    sim::AttentionKernelRates fa2{.unmasked_efficiency = kFa2UnmaskedEfficiency,
                                  .backward_efficiency = kFa2BackwardEfficiency,
                                  .backward_causal_tokens = causal_tokens("fa2")};
    set_causal_forward("fa2", fa2.efficiency, fa2.forward_causal_tokens);
    sim::AttentionKernelRates cudnn{.unmasked_efficiency = kCudnnUnmaskedEfficiency,
                                    .backward_efficiency = kCudnnBackwardEfficiency,
                                    .backward_causal_tokens = causal_tokens("cudnn")};
    set_causal_forward("cudnn", cudnn.efficiency, cudnn.forward_causal_tokens);
    a.kernels["fa2"] = fa2;
    a.kernels["cudnn"] = cudnn;
    out.attention_kernel_sources = {{"fa2", kernel_source("fa2", kFa2Rates)},
                                    {"cudnn", kernel_source("cudnn", kCudnnRates)}};
    out.profile.copy_engine_all_ranks_efficiency = kCopyEngineAllRanksEfficiency;
    out.all_ranks_source = copy_engine_all_ranks_source(gpu.name);
    source_nccl_channels(gpu, out);
    out.profile.gemm.shared_tail_tiles = kH200SharedTailTiles;
    out.shared_tail_source =
        std::string(gpu.compute_capability == 90 ? "not fitted here: " : "assumed: ") + kSharedTailOrigin +
        (gpu.compute_capability == 90 ? ", carried to this SM90 GPU (the same cuBLAS persistent GEMM kernels)"
                                      : ", carried to a GPU whose GEMM kernels it did not measure");
  }
  if (!points.shared_tail_points.empty()) {
    ComponentFit c;
    out.profile.gemm.shared_tail_tiles = fit_shared_tail(points.shared_tail_points, gpu, out.profile, c);
    out.shared_tail_source = "fitted on " + std::to_string(c.errors.size()) +
                             " GEMMs beside a copy kernel holding some SMs first (GEMM slowdown, max error " +
                             model::format_number("%.1f%%", c.max_abs_error_pct) + ")";
    out.fits.push_back(c);
  }
  if (!base && gpu.peak_fp8_flops > 0) {
    out.profile.attention.fp8_efficiency = kFa3Fp8Efficiency;
    out.attention_fp8_source = kFa3Fp8Source;
  }
  if (!points.fp8_gemms.empty() && gpu.peak_fp8_flops > 0) {
    fit_fp8_gemms(points.fp8_gemms, gpu, out);
  } else {
    derive_fp8_efficiency(gpu, out);  // from this GPU's published fractions, where known
  }
  if (!points.gemms.empty() || !base) derive_grouped_efficiency(out);  // follows the bf16 efficiency fitted here
  if (!out.profile.linear_attention) derive_linear_attention(out);
  derive_deepep(out);  // what the base profile does not give
}

// NCCL's rings: Simple and the low-latency regimes, and the per-call latency.
void fit_nccl_rings(const PointsByFit& points, const sim::GpuSpec& gpu, ProfileFit& out) {
  // One ring line across rank counts (steps and per-step bytes follow n). Points of unknown protocol
  // fit Simple and one low-latency regime; a regime fitted on points that name their protocol replaces it.
  bool simple_fitted = two_sizes(points.rings);
  if (simple_fitted) {
    std::vector<const Measurement*> ring = points.rings;
    ring.insert(ring.end(), points.ring_reduces.begin(), points.ring_reduces.end());
    fit_ring_protocols(ring, gpu, out);
  } else {
    // The call latency alone, on the all-reduces that run the low-latency regime (latency-bound).
    std::vector<const Measurement*> latency_bound;
    for (const Measurement* m : points.ring_reduces) {
      if (runs_low_latency_regime(*m, gpu, out.profile)) latency_bound.push_back(m);
    }
    // Two at least: one point would fit the constant exactly and say nothing of its error.
    if (latency_bound.size() >= 2) fit_call_latency(latency_bound, gpu, out);
  }
  // Points that name their protocol tell the call latency where nothing above did: with the
  // lowest-latency regime measured.
  if (out.call_latency_source.empty()) {
    for (const char* protocol : {"ll", "ll128", "simple"}) {
      const auto found = points.forced_rings.find(protocol);
      if (found == points.forced_rings.end() || !two_sizes(found->second)) continue;
      fit_call_latency_with_regime(protocol, found->second, gpu, out);
      break;
    }
  }
  for (const auto& [protocol, forced] : points.forced_rings) {
    if (!two_sizes(forced)) continue;
    if (protocol == "simple") {
      fit_transport("nccl_simple", forced, gpu, out.profile.nccl, out);
      simple_fitted = true;
      continue;
    }
    std::optional<sim::TransportParams>& regime = protocol == "ll" ? out.profile.nccl_ll : out.profile.nccl_ll128;
    regime = sim::TransportParams{};
    fit_transport("nccl_" + protocol, forced, gpu, *regime, out);
  }
  if (!simple_fitted) out.not_fitted.push_back("nccl");
}

// The optional transport sections and the tree and network.
void fit_optional_sections(const PointsByFit& points, const sim::GpuSpec& gpu, ProfileFit& out) {
  // The optional transport sections: absent unless measured (or in the base); multicast needs NVSwitch with
  // in-switch reduction.
  for (const sim::TransportSection& section : sim::transport_sections()) {
    const auto found = points.section_points.find(section.key);
    if (found == points.section_points.end() || !two_sizes(found->second)) continue;
    if (section.needs_switch_reduction && !gpu.switch_reduction) continue;
    std::optional<sim::TransportParams>& params = out.profile.*section.params;
    params = sim::TransportParams{};
    fit_transport(section.key, found->second, gpu, *params, out);
  }
  if (points.declined_ranks > 0) out.profile.nvls_min_ranks = points.declined_ranks + 1;
  if (two_sizes(points.trees)) fit_tree_section(points.trees, gpu, out);
  const auto widest = std::max_element(points.network.begin(), points.network.end(),
                                       [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  if (widest != points.network.end() && two_sizes(widest->second)) {
    fit_network(widest->second, out);  // optional, like nvls and two_shot: absent unless measured
  }
}

// Peer copies: step latency and efficiency from several sizes, the efficiency alone from one.
void fit_copies(const Points& copies, const sim::GpuSpec& gpu, ProfileFit& out) {
  if (two_sizes(copies)) {
    fit_copy_steps(copies, gpu, out);
  } else if (!copies.empty()) {
    // One size: the efficiency alone (its step latency stays assumed), each point's error that of the
    // copy step's closed form with the assumed latency, as the report predicts it.
    auto nominal_GBps = [&gpu](const Measurement* m) { return m->spec_GBps > 0 ? m->spec_GBps : gpu.nvlink_Bps / 1e9; };
    double sum = 0;
    for (const Measurement* m : copies) sum += m->algbw_GBps() / nominal_GBps(m);
    out.profile.copy_engine.link_efficiency = sum / static_cast<double>(copies.size());
    ComponentFit c;
    c.name = "copy_engine";
    for (const Measurement* m : copies) {
      const double predicted = copy_seconds(out.profile.copy_engine, *m, gpu.nvlink_Bps);
      c.errors.push_back({m->origin, 100.0 * (predicted / m->median_s - 1.0)});
      c.max_abs_error_pct = std::max(c.max_abs_error_pct, std::abs(c.errors.back().error_pct));
    }
    out.fits.push_back(c);
  } else {
    out.not_fitted.push_back("copy_engine");
  }
}

// Pulls while every rank pulls at once: the copy engine's rate then (copy_engine.all_ranks_link_efficiency), each
// point's bytes over the link after the copy engine's step latency (fitted from peer copies, or assumed), averaged.
// A rate above the link's is refused.
void fit_all_ranks_pulls(const Points& pulls, const sim::GpuSpec& gpu, ProfileFit& out) {
  const double link = gpu.nvlink_Bps;
  sim::TransportParams loaded = out.profile.copy_engine;
  const auto mean_efficiency = [&](const std::vector<size_t>& index) {
    double sum = 0;
    for (size_t i : index) {
      sum += copy_bytes_at_link(*pulls[i], link) / (std::max(pulls[i]->median_s - loaded.step_latency_s, 0.0) * link);
    }
    return sum / static_cast<double>(index.size());
  };
  const auto predict = [&](const double& efficiency, size_t i) {
    sim::TransportParams at = loaded;
    at.link_efficiency = efficiency;
    return copy_seconds(at, *pulls[i], link);
  };
  ComponentFit c = measure<double>("copy_engine_all_ranks", pulls, mean_efficiency, predict, &loaded.link_efficiency);
  if (!(loaded.link_efficiency <= 1.0)) {
    out.refused.push_back("copy_engine.all_ranks_link_efficiency " +
                          model::format_number("%.3g", loaded.link_efficiency) +
                          " from pulls while every rank pulls: above the link's rate (a pull cannot beat its link; "
                          "check their bytes and ranks, or time them again with tpsim-real memcpy --path "
                          "peer_all_ranks)");
    return;
  }
  out.profile.copy_engine_all_ranks_efficiency = loaded.link_efficiency;
  std::string origins;
  for (const Measurement* m : pulls) {
    const std::string source = m->provenance.value("source", "");
    origins += (origins.empty() ? "" : ", ") + m->origin + (source.empty() ? "" : ": " + source);
  }
  out.fits.push_back(c);
  out.all_ranks_source = "fitted on " + std::to_string(pulls.size()) + (pulls.size() == 1 ? " pull" : " pulls") +
                         " while every rank of the group pulled at once (" + origins + "), less the copy engine's " +
                         (out.copy_latency_fitted ? "fitted" : "assumed") + " step latency, over the link";
}

}  // namespace

bool has_fit(const ProfileFit& fit, const std::string& name) {
  return std::any_of(fit.fits.begin(), fit.fits.end(), [&](const ComponentFit& c) { return c.name == name; });
}

std::vector<std::string> nccl_tests_still_needed(const ProfileFit& fit) {
  const auto fitted = [&](std::initializer_list<const char*> names) {
    return std::any_of(fit.fits.begin(), fit.fits.end(), [&](const ComponentFit& c) {
      return std::find(names.begin(), names.end(), c.name) != names.end();
    });
  };
  std::vector<std::string> needed;
  if (!fitted({"nccl", "nccl_simple", "nccl_ll", "nccl_ll128"})) {
    needed.emplace_back(
        "all_gather_perf and reduce_scatter_perf on one node (-b 1M -e 1G -f 2): the nccl ring section, which "
        "sequence parallelism's and FSDP's all-gathers and reduce-scatters run on");
  }
  if (!fitted({"nccl", "nccl_call_latency"})) {
    needed.emplace_back(
        "all_reduce_perf on one node beside all_gather_perf (-b 8 -e 1G -f 2, and with -G 20 for the device's time): "
        "nccl.call_latency_us, each NCCL call's device time");
  }
  if (!fitted({"network"})) {
    needed.emplace_back(
        "all_reduce_perf on two nodes or more with NCCL_ALGO=Ring: the network section (data-parallel and "
        "multi-node collectives)");
  }
  if (!fitted({"tree"})) {
    needed.emplace_back(
        "all_reduce_perf on two nodes or more with NCCL_ALGO=Tree: the tree section (NCCL's choice for small and "
        "mid-size all-reduces across nodes; without it they run as rings)");
  }
  return needed;
}

std::string fa3_forward_source() {
  return kFa3Rates + causal_forward_source(published_causal_forward("fa3"));
}

void carry_attention_sources(const std::string& from_gpu, const sim::GpuSpec& target, ProfileFit& out,
                             const std::string& unknown_origin) {
  const bool same_kernels = target.compute_capability == 90;
  const auto carried = [&](const std::string& origin) {
    const std::string& said = origin.empty() ? unknown_origin : origin;
    return std::string(same_kernels ? "not fitted here: " : "assumed: ") + "the " + from_gpu + " value, carried to " +
           target.name + (same_kernels ? " (the same SM90 kernels)" : ", whose attention kernels it did not measure") +
           (said.empty() ? "" : " (" + said + ")");
  };
  out.attention_source = carried(out.attention_source.empty() ? fa3_forward_source() : out.attention_source);
  out.attention_backward_source = carried(out.attention_backward_source);
  if (out.profile.attention.fp8_efficiency) out.attention_fp8_source = carried(out.attention_fp8_source);
  for (const auto& [name, rates] : out.profile.attention.kernels) {
    const auto known = out.attention_kernel_sources.find(name);
    out.attention_kernel_sources[name] = carried(known != out.attention_kernel_sources.end() ? known->second : "");
  }
}

std::string torch_collective_host_source() {
  return "not fitted here: torch.distributed's host work per NCCL call as the h200-sxm profile fits it on the H200 "
         "all-reduce sweep (allreduce_h200_busbw.csv: one call at a time through torch 2.9.1 on an idle GPU, after "
         "the device's time and launch.host_us), carried to every GPU (the host's work, not the GPU's)";
}

std::string copy_engine_all_ranks_source(const std::string& gpu) {
  if (gpu == "h100-sxm") return std::string("not fitted here: ") + kCopyEngineAllRanksOrigin;
  return carried_all_ranks_source(gpu, "h100-sxm", kCopyEngineAllRanksOrigin);
}

std::string carried_all_ranks_source(const std::string& gpu, const std::string& measured_on,
                                     const std::string& origin) {
  return "assumed: the " + measured_on + " value, carried to " + gpu + " without a measurement of its own (" + origin +
         ")";
}

ProfileFit fit_profile(const std::vector<Measurement>& measurements, const sim::GpuSpec& gpu,
                       const sim::CostProfile* base, const std::string& base_name) {
  ProfileFit out;
  if (base) {
    out.profile = *base;
    out.base = base_name;
    if (base->gpu != gpu.name) {
      carry_attention_sources(base->gpu, gpu, out, "as in " + base_name);
      if (base->copy_engine_all_ranks_efficiency) {
        out.all_ranks_source = carried_all_ranks_source(gpu.name, base->gpu, "as in " + base_name);
      }
    }
  } else {
    out.profile.copy_engine.step_latency_s = kAssumedCopyEngineStepLatency_s;
    out.profile.host_launch_s = kAssumedHostLaunch_s;
    out.profile.collective_host_s = kTorchCollectiveHostUs * 1e-6;
  }
  out.profile.gpu = gpu.name;
  const PointsByFit points = sort_points(measurements, gpu, out);
  fit_compute(points, gpu, base, out);
  fit_nccl_rings(points, gpu, out);
  fit_optional_sections(points, gpu, out);
  if (!points.launches.empty()) fit_launches(points.launches, out);
  // GEMMs beside peer copies: the copies' power draw, before the SM share is fitted with it.
  fit_transfer_energy(points.copy_overlaps, gpu, out);
  // GEMMs beside collectives the simulator can rebuild (fp8 ones need an fp8 rate).
  std::vector<const Measurement*> sm_points;
  for (const Measurement* m : points.overlaps) {
    if (composite_not_modelled(*m, sim::CostModel(gpu, out.profile)).empty()) sm_points.push_back(m);
  }
  if (!sm_points.empty()) fit_sm_share(sm_points, gpu, out);
  fit_copies(points.copies, gpu, out);
  if (!points.all_ranks_pulls.empty()) fit_all_ranks_pulls(points.all_ranks_pulls, gpu, out);
  if (out.fits.empty() && !out.refused.empty()) throw InputError(out.refused.front());
  if (out.fits.empty()) {
    throw InputError(
        "these measurements calibrate nothing: fits need bf16 GEMMs, ring (or unknown) all-gathers / "
        "reduce-scatters, ring all-reduces (the NCCL call latency), one-shot, two-shot, NVLS or tree all-reduces, ring "
        "all-reduces across nodes, peer copies, or GEMMs beside collectives or beside peer copies (two at least) "
        "(all-reduces of unknown algorithm inside one node, all-to-alls and send/recvs are not fitted yet), of " +
        gpu.name + " (" + std::to_string(out.other_gpu_points) +
        " points of other GPUs), each collective at two message sizes at least");
  }
  return out;
}

}  // namespace tpsim::calibrate
