// The profile's component fits: GEMMs (bf16, fp8), collectives (ring protocols, one- and two-shot,
// NVLS, tree, network), copies, launches and the SM share of NCCL kernels.
#include "calibrate/fits/component_fits.hpp"

#include "sim/cost/nccl_tuner.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <limits>
#include <map>
#include <optional>

#include "base/input_error.hpp"
#include "base/units.hpp"
#include "calibrate/fits/fit_measure.hpp"
#include "calibrate/fits/gemm_fit.hpp"
#include "calibrate/fits/tree_fit.hpp"
#include "calibrate/profile/profile_transfer.hpp"
#include "calibrate/validation/composite_model.hpp"
#include "sim/cost/call_timing.hpp"
#include "sim/cost/collective_time.hpp"
#include "sim/cost/fabric.hpp"

namespace tpsim::calibrate {

void fit_gemms(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu, ProfileFit& out) {
  std::vector<GemmSample> samples;
  for (const Measurement* m : points) samples.push_back({{m->m, m->n, m->k}, m->median_s});
  sim::GemmParams params;
  out.fits.push_back(measure<sim::GemmParams>(
      "gemm", points,
      [&](const std::vector<size_t>& index) { return fit_gemm(subset(samples, index), gpu, sim::GemmParams{}).params; },
      [&](const sim::GemmParams& p, size_t i) {
        sim::CostProfile profile;
        profile.gemm = p;
        const model::GemmShape& s = samples[i].shape;
        return sim::CostModel(gpu, profile).gemm_seconds(s, model::gemm_bytes(s, model::kBf16Bytes));
      },
      &params));
  out.profile.gemm = params;
  out.profile.memory.hbm_efficiency = params.hbm_efficiency;
  out.profile.memory.overhead_s = params.overhead_s;
}

namespace {

// fp8 GEMMs: the fp8 peak's fraction a full wave reaches. With the bf16 fit's overhead, tiling and HBM
// efficiency kept, a compute-bound point's time is overhead + c / efficiency (c: its FLOPs over the fp8
// peak and its wave and tile efficiencies): relative-error least squares for 1 / efficiency (Eigen
// QR) over the compute-bound points.
double fit_fp8_efficiency(const std::vector<GemmSample>& samples, const sim::GpuSpec& gpu,
                          const sim::CostProfile& profile) {
  sim::CostProfile at_full_rate = profile;
  at_full_rate.gemm.fp8_efficiency = 1.0;
  const sim::CostModel cost(gpu, at_full_rate);
  std::vector<double> c, t;
  for (const GemmSample& s : samples) {
    const double unit = cost.gemm_compute_seconds(s.shape, true);
    const double memory_s = s.bytes / (gpu.hbm_Bps * profile.gemm.hbm_efficiency);
    if (s.seconds - profile.gemm.overhead_s <= memory_s) continue;  // memory-bound: says nothing of the rate
    c.push_back(unit);
    t.push_back(s.seconds);
  }
  if (c.empty()) throw InputError("an fp8 GEMM fit needs compute-bound fp8 GEMMs; all of these are memory-bound");
  Eigen::MatrixXd design(static_cast<Eigen::Index>(c.size()), 1);
  Eigen::VectorXd target(static_cast<Eigen::Index>(c.size()));
  for (size_t i = 0; i < c.size(); ++i) {
    design(static_cast<Eigen::Index>(i), 0) = c[i] / t[i];
    target(static_cast<Eigen::Index>(i)) = (t[i] - profile.gemm.overhead_s) / t[i];
  }
  return 1.0 / design.colPivHouseholderQr().solve(target)(0);
}

}  // namespace

void fit_fp8_gemms(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu, ProfileFit& out) {
  std::vector<GemmSample> samples;
  for (const Measurement* m : points) {
    const model::GemmShape shape{m->m, m->n, m->k};
    samples.push_back({shape, m->median_s, model::gemm_bytes(shape, model::kFp8Bytes, model::kBf16Bytes)});
  }
  const sim::CostProfile bf16 = out.profile;
  double efficiency = 0;
  out.fits.push_back(measure<double>(
      "gemm_fp8", points,
      [&](const std::vector<size_t>& index) { return fit_fp8_efficiency(subset(samples, index), gpu, bf16); },
      [&](const double& e, size_t i) {
        sim::CostProfile profile = bf16;
        profile.gemm.fp8_efficiency = e;
        return sim::CostModel(gpu, profile).gemm_seconds(samples[i].shape, samples[i].bytes, true);
      },
      &efficiency));
  out.profile.gemm.fp8_efficiency = efficiency;
  out.fp8_source = "fitted on fp8 GEMMs (e4m3 operands)";
}

// Where a GPU has no fp8 GEMM measurements: its bf16 efficiency times the ratio of its published fp8
// and bf16 max-achievable-matmul fractions of peak.
void derive_fp8_efficiency(const sim::GpuSpec& gpu, ProfileFit& out) {
  const std::optional<MamfFractions> f = mamf_fractions(gpu.name);
  if (!f || !f->fp8_pct) return;
  out.profile.gemm.fp8_efficiency = out.profile.gemm.efficiency * *f->fp8_pct / f->bf16_pct;
  out.fp8_source = "not fitted: the bf16 efficiency x " + model::format_number("%.1f", *f->fp8_pct) + " / " +
                   model::format_number("%.1f", f->bf16_pct) +
                   ", the fp8 and bf16 max-achievable-matmul fractions of peak (gemm_mamf.csv)";
}

void derive_grouped_efficiency(ProfileFit& out) {
  out.profile.gemm.grouped_efficiency = out.profile.gemm.efficiency * kGroupedGemmRatio;
  out.grouped_source = "not fitted: the bf16 efficiency x " + model::format_number("%.4f", kGroupedGemmRatio) +
                       ", CUTLASS grouped bf16 GEMMs of Qwen3-30B-A3B's expert shapes on H100 over this model's "
                       "dense rate for their tiles (TransformerEngine PR #2045; grouped_gemm_h100_bf16.csv)";
}

void derive_linear_attention(ProfileFit& out) {
  out.profile.linear_attention =
      sim::LinearAttentionParams{kDeltaRuleEfficiency, kDeltaRuleChunkStepUs * 1e-6, kDeltaRuleDecodeHbmEfficiency,
                                 kDeltaRuleDecodeOverheadUs * 1e-6, kDeltaRuleBackwardRatio};
}

void derive_deepep(ProfileFit& out) {
  const sim::DeepEpLowLatencyParams low_latency{kDeepEpLowLatencyDispatchNvlinkEfficiency,
                                                kDeepEpLowLatencyCombineNvlinkEfficiency,
                                                kDeepEpLowLatencyDispatchNvlinkLatencyUs * 1e-6,
                                                kDeepEpLowLatencyCombineNvlinkLatencyUs * 1e-6,
                                                kDeepEpLowLatencyRdmaEfficiency,
                                                kDeepEpLowLatencyRdmaLatencyUs * 1e-6};
  if (!out.profile.deepep) {
    out.profile.deepep = sim::DeepEpParams{kDeepEpNvlinkEfficiency, kDeepEpRdmaEfficiency, std::nullopt};
  }
  if (!out.profile.deepep->low_latency) out.profile.deepep->low_latency = low_latency;
}

// Peer copies at two sizes or more: the copy engine's step latency and efficiency. The bytes of a copy
// over a link of another stated nominal rate are scaled to the GPU's NVLink so that all share one line
// (copy_bytes_at_link); each point is predicted as the report predicts it (copy_seconds).
void fit_copy_steps(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu, ProfileFit& out) {
  const double link = gpu.nvlink_Bps;
  std::vector<RingSample> samples;
  for (const Measurement* m : points) samples.push_back({1, copy_bytes_at_link(*m, link), m->median_s});
  out.fits.push_back(measure<sim::TransportParams>(
      "copy_engine", points,
      [&](const std::vector<size_t>& index) { return fit_copy_step(subset(samples, index), link).params; },
      [&](const sim::TransportParams& p, size_t i) { return copy_seconds(p, *points[i], link); },
      &out.profile.copy_engine));
  out.copy_latency_fitted = true;
}

namespace {

// The SMs an NCCL kernel takes from a concurrent GEMM, from overlap points (a GEMM beside a
// collective): every count from 1 to half the GPU's SMs is simulated and the one whose predicted
// overlapped GEMM times have the least squared log error is kept (an exhaustive search over integers).
// NCCL runs one thread block per channel and caps channels at MAXCHANNELS (32 or 64, by release):
// half the SMs (66 on H100) covers every count it can take.
int fit_nccl_sms(const std::vector<const Measurement*>& points, const std::vector<size_t>& index,
                 const sim::GpuSpec& gpu, const sim::CostProfile& base) {
  int best = base.nccl_sms;
  double best_error = std::numeric_limits<double>::infinity();
  for (int sms = 1; sms <= gpu.sm_count / 2; ++sms) {
    sim::CostProfile profile = base;
    profile.nccl_sms = sms;
    const sim::CostModel cost(gpu, profile);
    double error = 0;
    for (size_t i : index) {
      const double predicted = predict_composite(*points[i], cost, {}).gemm_overlapped_s;
      error += std::pow(std::log(predicted / points[i]->gemm_overlapped_s), 2);
    }
    if (error < best_error) {
      best_error = error;
      best = sms;
    }
  }
  return best;
}

}  // namespace

void fit_sm_share(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu, ProfileFit& out) {
  const sim::CostProfile base = out.profile;
  int sms = base.nccl_sms;
  out.fits.push_back(measure<int>(
      "nccl_sms", points, [&](const std::vector<size_t>& index) { return fit_nccl_sms(points, index, gpu, base); },
      [&](const int& k, size_t i) {
        sim::CostProfile profile = base;
        profile.nccl_sms = k;
        // The point's error is its overlapped GEMM time's, compared as a time below.
        return predict_composite(*points[i], sim::CostModel(gpu, profile), {}).gemm_overlapped_s /
               points[i]->gemm_overlapped_s * points[i]->median_s;
      },
      &sms));
  out.profile.nccl_sms = sms;
}

// Launch chains (tpsim-real launch): the host time per launched kernel from same-stream chains, and
// per cross-stream wait from the extra time of chains alternating between two streams; the GPU's time
// per cross-stream wait from the same chains queued ahead of the GPU. Each is a mean of per-kernel
// times; a chain's predicted time is kernels x (launch or kernel + its waits).
void fit_launches(const std::vector<const Measurement*>& points, ProfileFit& out) {
  // Mean time per kernel of each pattern's chains.
  std::map<std::string, std::pair<double, int>> per_kernel;
  for (const Measurement* m : points) {
    auto& [sum, count] = per_kernel[m->pattern];
    sum += m->median_s / m->kernels;
    ++count;
  }
  const auto mean = [&](const std::string& pattern) -> std::optional<double> {
    const auto it = per_kernel.find(pattern);
    if (it == per_kernel.end()) return std::nullopt;
    return it->second.first / it->second.second;
  };
  // Eager chains are host-bound: a launch per kernel, and a wait more where it crosses streams.
  if (const auto same = mean("same_stream")) {
    out.launch_host_fitted = true;
    out.profile.host_launch_s = *same;
    if (const auto cross = mean("cross_stream")) out.profile.stream_wait_s = std::max(0.0, *cross - *same);
  }
  // Queued chains are GPU-bound: a kernel's own time, and a device-side wait more across streams.
  const std::optional<double> gpu_kernel = mean("same_stream_queued");
  if (gpu_kernel) {
    if (const auto cross = mean("cross_stream_queued")) {
      out.launch_gpu_fitted = true;
      out.profile.gpu_wait_s = std::max(0.0, *cross - *gpu_kernel);
    }
  }
  ComponentFit c;
  c.name = "launch";
  for (const Measurement* m : points) {
    const bool queued = m->pattern.find("_queued") != std::string::npos;
    const double waits = m->pattern.rfind("cross_stream", 0) == 0 ? 1.0 : 0.0;
    const double per = queued ? gpu_kernel.value_or(0) + waits * out.profile.gpu_wait_s
                              : out.profile.host_launch_s + waits * out.profile.stream_wait_s;
    c.errors.push_back({m->origin, 100.0 * (m->kernels * per / m->median_s - 1.0)});
    c.max_abs_error_pct = std::max(c.max_abs_error_pct, std::abs(c.errors.back().error_pct));
  }
  out.fits.push_back(c);
}

namespace {

using model::Protocol;

// Whether every point of a fit of NCCL's per-call constant was timed one call at a time through torch.distributed,
// its host work inside each time (false: every one shows the device's time: nccl-tests' loop or a graph). A mix is
// refused: the constant they would share could not be split into the device's part and the host's.
bool timed_with_host(const std::vector<const Measurement*>& points, const std::string& what) {
  const Measurement* host = nullptr;
  const Measurement* device = nullptr;
  for (const Measurement* m : points) {
    const Measurement*& first = m->host_in_time() ? host : device;
    if (!first) first = m;
  }
  if (host && device) {
    throw InputError(what + ": its points mix collectives timed one call at a time through torch.distributed (" +
                     host->origin + ") and timed as the device's (" + device->timed_as + ", " + device->origin +
                     "); give them the same timed_as, or fit them in separate runs of tpsim calibrate");
  }
  return host != nullptr;
}

// How the points were timed, for a source: their timed_as values, each once.
std::string timings_of(const std::vector<const Measurement*>& points) {
  std::vector<std::string> seen;
  for (const Measurement* m : points) {
    if (std::find(seen.begin(), seen.end(), m->timed_as) == seen.end()) seen.push_back(m->timed_as);
  }
  std::string text;
  for (const std::string& t : seen) text += (text.empty() ? "" : ", ") + t;
  return "timed as " + text;
}

// Why fitted transport values cannot be (a link carrying more than its line rate, a latency below zero), in one
// line naming the value and what measurements would fit it; empty when they can.
std::string impossible_transport(const std::string& section, const sim::TransportParams& p, const std::string& fix) {
  std::string why;
  if (!(p.link_efficiency <= 1)) {
    why = section + ".link_efficiency " + model::format_number("%.3g", p.link_efficiency) +
          " is above 1: these points are faster than tpsim's " + section +
          " plan moving their bytes at the links' "
          "full rate, so they did not run as that plan describes";
  } else if (!(p.step_latency_s >= 0)) {
    why = section + ".step_latency_us " + model::format_number("%.3g", p.step_latency_s * 1e6) +
          " is below 0: the small messages are faster than the call latency allows";
  }
  return why.empty() ? why : "the " + section + " fit is refused: " + why + "; " + fix;
}

// A fitted transport section kept only when its values can be: otherwise the refusal is recorded, the fit's
// errors dropped and the section restored to `kept` (the base's, or absent).
void keep_if_possible(const std::string& section, const std::string& fix, std::optional<sim::TransportParams>& target,
                      const std::optional<sim::TransportParams>& kept, ProfileFit& out) {
  if (!target) return;
  const std::string why = impossible_transport(section, *target, fix);
  if (why.empty()) return;
  out.refused.push_back(why);
  out.fits.pop_back();
  target = kept;
}

// The host time inside the times of points timed through torch.distributed, under the profile.
double torch_host_s(const sim::CostProfile& p, bool nccl_call = true) {
  return sim::call_host_seconds(sim::CallTiming::kTorch, p, nccl_call);
}

// The per-call constant that points' times hold under the profile: NCCL's device time per call, and the host's
// work where they were timed through torch.
double timed_call_latency_s(bool with_host, const sim::CostProfile& p) {
  return p.nccl_call_latency_s + (with_host ? torch_host_s(p) : 0.0);
}

// The profile from a fitted per-call constant `c`: of points timed as the device's, NCCL's device time per call; of
// points timed through torch, the device's part is kept from the base, or without one is NCCL's own base latency of
// a ring call of `protocol` (assumed), and torch.distributed's host work per call (launch.collective_host_us) is the
// rest after the launch (launch.host_us).
void set_call_latency(double c, bool with_host, Protocol protocol, ProfileFit& out) {
  if (!with_host) {
    out.profile.nccl_call_latency_s = c;
    return;
  }
  const double device_s = out.base.empty() ? sim::nccl_ring_base_latency_s(protocol) : out.profile.nccl_call_latency_s;
  const double above_launch_s = std::max(0.0, c - out.profile.host_launch_s);
  out.profile.nccl_call_latency_s = std::min(above_launch_s, device_s);
  out.profile.collective_host_s = above_launch_s - out.profile.nccl_call_latency_s;
  out.call_latency_split = true;
  out.timed_call_latency_s = c;
  out.call_latency_protocol = protocol;
}

}  // namespace

// A transport fit of `name` (a ring protocol, one_shot, two_shot, nvls): the fitter and its closed form
// (sim/cost/collective_time.hpp). NCCL's (the rings and NVLS) pay the profile's call latency on top.
void fit_transport(const std::string& name, const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu,
                   sim::TransportParams& target, ProfileFit& out) {
  const bool ring = name.rfind("nccl", 0) == 0;
  const bool nccl_call = ring || name == "nvls";
  const std::vector<RingSample> samples = ring_samples(points, torch_host_s(out.profile, nccl_call));
  const double link = gpu.nvlink_Bps;
  const double call_s = nccl_call ? out.profile.nccl_call_latency_s : 0.0;
  const auto fit = [&](const std::vector<size_t>& index) {
    const std::vector<RingSample> chosen = subset(samples, index);
    if (ring) return fit_ring(chosen, link, call_s).params;
    if (name == "one_shot") return fit_one_shot(chosen, link).params;
    if (name == "two_shot") return fit_two_shot(chosen, link).params;
    if (name.rfind("multimem", 0) == 0) return fit_multimem(chosen, link).params;
    return fit_nvls(chosen, link, call_s).params;
  };
  const auto predict = [&](const sim::TransportParams& p, size_t i) {
    const RingSample& s = samples[i];
    if (ring) return ring_seconds(p, s, link, call_s);
    if (name == "one_shot")
      return sim::one_shot_seconds(p, model::CollectiveKind::kAllReduce, s.tensor_bytes, s.ranks, link);
    if (name == "two_shot") return sim::two_shot_seconds(p, s.tensor_bytes, s.ranks, link);
    if (name.rfind("multimem", 0) == 0) return sim::multimem_seconds(p, s.kind, s.tensor_bytes, s.ranks, link);
    return sim::nvls_seconds(p, s.tensor_bytes, s.ranks, link, call_s) + s.framework_s;
  };
  out.fits.push_back(measure<sim::TransportParams>(name, points, fit, predict, &target));
}

// The NCCL ring in one or two protocol regimes (LL / LL128 for small messages, Simple for large), and
// the call latency where the points hold two step counts.
void fit_ring_protocols(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu, ProfileFit& out) {
  const std::vector<RingSample> samples = ring_samples(points);
  const bool with_host = timed_with_host(points, "nccl.call_latency_us");
  const double kept_call_s = timed_call_latency_s(with_host, out.profile);
  const auto fit = [&](const std::vector<size_t>& index) {
    return fit_ring_regimes(subset(samples, index), gpu.nvlink_Bps, kept_call_s);
  };
  const auto predict = [&](const RingRegimes& r, size_t i) {
    return ring_regimes_seconds(r, samples[i], gpu.nvlink_Bps);
  };
  RingRegimes regimes;
  out.fits.push_back(measure<RingRegimes>("nccl", points, fit, predict, &regimes));
  out.profile.nccl = regimes.simple;
  out.profile.nccl_small = regimes.has_small ? std::optional<sim::TransportParams>(regimes.small) : std::nullopt;
  if (regimes.call_latency_fitted) {
    set_call_latency(regimes.call_latency_s, with_host, regimes.has_small ? Protocol::kLL : Protocol::kSimple, out);
    out.call_latency_source =
        "fitted with the ring's " + std::string(regimes.has_small ? "low-latency regime" : "line") +
        " on all-reduces beside all-gathers / reduce-scatters (two step counts), " + timings_of(points);
  }
}

void fit_call_latency(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu, ProfileFit& out) {
  const std::vector<RingSample> samples = ring_samples(points);
  RingRegimes kept;
  kept.simple = out.profile.nccl;
  kept.has_small = out.profile.nccl_small.has_value();
  if (kept.has_small) kept.small = *out.profile.nccl_small;
  const auto fit = [&](const std::vector<size_t>& index) {
    // Relative least squares of one constant: c = sum((t - g) / t^2) / sum(1 / t^2).
    double numerator = 0, denominator = 0;
    for (size_t i : index) {
      const double t = samples[i].seconds;
      numerator += (t - ring_regimes_seconds(kept, samples[i], gpu.nvlink_Bps)) / (t * t);
      denominator += 1 / (t * t);
    }
    return std::max(0.0, numerator / denominator);
  };
  const auto predict = [&](const double& c, size_t i) {
    return c + ring_regimes_seconds(kept, samples[i], gpu.nvlink_Bps);
  };
  const bool with_host = timed_with_host(points, "nccl.call_latency_us");
  double fitted = 0;
  out.fits.push_back(measure<double>("nccl_call_latency", points, fit, predict, &fitted));
  set_call_latency(fitted, with_host, Protocol::kLL, out);
  out.call_latency_source =
      "fitted alone on ring all-reduces that run the low-latency regime (no all-gather / reduce-scatter ring to fit "
      "beside them), its per-step latencies and efficiencies kept from " +
      (out.base.empty() ? std::string("the defaults") : out.base) + ", " + timings_of(points);
}

void fit_call_latency_with_regime(const std::string& protocol, const std::vector<const Measurement*>& points,
                                  const sim::GpuSpec& gpu, ProfileFit& out) {
  const std::vector<RingSample> samples = ring_samples(points);
  const double link = gpu.nvlink_Bps;
  const double nccl_step_s = sim::nccl_ring_step_latency_s(true, *model::protocol_named(protocol));
  const auto fit = [&](const std::vector<size_t>& index) {
    return fit_ring_and_call(subset(samples, index), link, nccl_step_s);
  };
  const auto predict = [&](const RingCallFit& f, size_t i) {
    return ring_seconds(f.params, samples[i], link, f.call_latency_s);
  };
  const bool with_host = timed_with_host(points, "nccl.call_latency_us");
  RingCallFit fitted;
  out.fits.push_back(measure<RingCallFit>("nccl_call_latency", points, fit, predict, &fitted));
  set_call_latency(fitted.call_latency_s, with_host, *model::protocol_named(protocol), out);
  out.call_latency_source = "fitted with the ring's " + protocol + " regime (points that name their protocol)" +
                            (fitted.step_latency_fitted ? std::string(" on two step counts")
                                                        : ", its per-step latency held at NCCL's own " +
                                                              model::format_number("%.1f", nccl_step_s * 1e6) +
                                                              " us (one step count cannot tell the two apart)") +
                            ", " + timings_of(points);
}

// The network transport of multi-node ring all-reduces (one rank and node count).
void fit_network(const std::vector<const Measurement*>& points, ProfileFit& out) {
  const Measurement& first = *points.front();
  const int rails = first.ranks / first.nodes;  // the schema checks that nodes divide ranks
  const double nic_Bps = first.nic_GBps > 0 ? first.nic_GBps * 1e9 : sim::kDefaultRailNicBps;
  const double node_nic_Bps = rails * nic_Bps;
  const double call_s = out.profile.nccl_call_latency_s;
  const std::vector<RingSample> samples = ring_samples(points, torch_host_s(out.profile));
  const auto fit = [&](const std::vector<size_t>& index) {
    return fit_network_ring(subset(samples, index), node_nic_Bps, call_s).params;
  };
  const auto predict = [&](const sim::TransportParams& p, size_t i) {
    return ring_seconds(p, samples[i], node_nic_Bps, call_s);  // all-reduces: 2 (n - 1) steps each
  };
  const std::optional<sim::TransportParams> kept = out.profile.network;
  out.profile.network = sim::TransportParams{};
  out.fits.push_back(measure<sim::TransportParams>("network", points, fit, predict, &*out.profile.network));
  keep_if_possible(
      "network",
      "fit it on ring all-reduces across two nodes or more run with NCCL_ALGO=Ring (all_reduce_perf), with "
      "each GPU's NIC rate (nic_GBps) where it is not ib-rail's 50 GB/s",
      out.profile.network, kept, out);
}

// NCCL's tree all-reduce, on every tree point of this GPU (any rank and node count).
void fit_tree_section(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu, ProfileFit& out) {
  std::vector<TreeSample> samples;
  for (const Measurement* m : points) {
    samples.push_back({m->ranks, m->nodes, m->nic_GBps * 1e9, m->bytes, m->median_s,
                       m->host_in_time() ? torch_host_s(out.profile) : 0.0});
  }
  const sim::CostProfile base = out.profile;
  const auto fit = [&](const std::vector<size_t>& index) { return fit_tree(subset(samples, index), gpu, base).params; };
  const auto predict = [&](const sim::TransportParams& p, size_t i) { return tree_seconds(p, samples[i], gpu, base); };
  const std::optional<sim::TransportParams> kept = out.profile.tree;
  out.profile.tree = sim::TransportParams{};
  out.fits.push_back(measure<sim::TransportParams>("tree", points, fit, predict, &*out.profile.tree));
  const bool inferred = std::any_of(points.begin(), points.end(),
                                    [](const Measurement* m) { return m->provenance.contains("nccl_choice"); });
  keep_if_possible("tree",
                   std::string(inferred ? "these points' tree was inferred from NCCL's tuner (the log names no "
                                          "NCCL_ALGO); "
                                        : "") +
                       "fit it on all_reduce_perf across two nodes or more run with NCCL_ALGO=Tree, up to the sizes "
                       "where the bandwidth shows (64 MiB and more)",
                   out.profile.tree, kept, out);
}

}  // namespace tpsim::calibrate
