// Groups measurements by what they calibrate, runs each fitter, and measures every fit's error.
#include "calibrate/profile_fit.hpp"
#include "model/units.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <tuple>

#include "calibrate/composite_model.hpp"
#include "calibrate/gemm_fit.hpp"
#include "calibrate/ring_fit.hpp"
#include "calibrate/tree_fit.hpp"
#include "model/input_error.hpp"
#include "sim/fabric.hpp"

namespace tpsim::calibrate {
namespace {

// Assumed where no measurement exists (stated in the profile): a copy-engine step's latency and
// the host time per launched op.
constexpr double kAssumedCopyEngineStepLatency_s = 3e-6;
constexpr double kAssumedHostLaunch_s = 4e-6;

struct Group {
  std::vector<const Measurement*> points;
  std::vector<RingSample> samples() const {
    std::vector<RingSample> out;
    for (const Measurement* m : points) out.push_back({m->ranks, m->bytes, m->median_s});
    return out;
  }
};

// Fits with `fit` on all points and on the even ones; `predict(params, i)` gives point i's time.
template <typename Params>
ComponentFit measure(const std::string& name, const std::vector<const Measurement*>& points,
                     const std::function<Params(const std::vector<size_t>&)>& fit,
                     const std::function<double(const Params&, size_t)>& predict, Params* fitted) {
  std::vector<size_t> all(points.size()), even, odd;
  for (size_t i = 0; i < points.size(); ++i) {
    all[i] = i;
    (i % 2 == 0 ? even : odd).push_back(i);
  }
  *fitted = fit(all);
  ComponentFit c;
  c.name = name;
  for (size_t i = 0; i < points.size(); ++i) {
    const double error = 100.0 * (predict(*fitted, i) / points[i]->median_s - 1.0);
    c.errors.push_back({points[i]->origin, error});
    c.max_abs_error_pct = std::max(c.max_abs_error_pct, std::abs(error));
  }
  if (points.size() >= 4) {
    const Params held = fit(even);
    c.held_out_max_abs_error_pct = 0;
    for (size_t i : odd) {
      c.held_out_max_abs_error_pct =
          std::max(c.held_out_max_abs_error_pct, std::abs(100.0 * (predict(held, i) / points[i]->median_s - 1.0)));
    }
  }
  return c;
}

// A latency and an efficiency are only told apart by at least two message sizes.
bool two_sizes(const std::vector<const Measurement*>& points) {
  for (const Measurement* m : points) {
    if (m->bytes != points.front()->bytes) return true;
  }
  return false;
}

std::vector<RingSample> subset(const std::vector<RingSample>& samples, const std::vector<size_t>& index) {
  std::vector<RingSample> out;
  for (size_t i : index) out.push_back(samples[i]);
  return out;
}

void fit_gemms(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu, ProfileFit& out) {
  std::vector<GemmSample> samples;
  for (const Measurement* m : points) samples.push_back({{m->m, m->n, m->k}, m->median_s});
  sim::GemmParams params;
  out.fits.push_back(measure<sim::GemmParams>(
      "gemm", points,
      [&](const std::vector<size_t>& index) {
        std::vector<GemmSample> chosen;
        for (size_t i : index) chosen.push_back(samples[i]);
        return fit_gemm(chosen, gpu, sim::GemmParams{}).params;
      },
      [&](const sim::GemmParams& p, size_t i) {
        sim::CostProfile profile;
        profile.gemm = p;
        const model::GemmShape& s = samples[i].shape;
        return sim::CostModel(gpu, profile).gemm_seconds(s, model::gemm_bytes(s, 2.0));
      },
      &params));
  out.profile.gemm = params;
  out.profile.memory.hbm_efficiency = params.hbm_efficiency;
  out.profile.memory.overhead_s = params.overhead_s;
}

// fp8 GEMMs: the fp8 peak's fraction a full wave reaches. With the bf16 fit's overhead, tiling and HBM
// efficiency kept, a compute-bound point's time is overhead + c / efficiency (c: its FLOPs over the fp8
// peak and its wave and tile efficiencies): relative-error least squares for 1 / efficiency (Eigen
// QR) over the compute-bound points.
double fit_fp8_efficiency(const std::vector<GemmSample>& samples, const sim::GpuSpec& gpu,
                          const sim::CostProfile& profile) {
  const sim::CostModel cost(gpu, profile);
  std::vector<double> c, t;
  for (const GemmSample& s : samples) {
    const sim::GemmTiling tiling = cost.gemm_tiling(s.shape);
    const double flops =
        2.0 * static_cast<double>(s.shape.m) * static_cast<double>(s.shape.n) * static_cast<double>(s.shape.k);
    const double unit = flops / (gpu.peak_fp8_flops * tiling.wave_efficiency * tiling.tile_efficiency);
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

void fit_fp8_gemms(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu, ProfileFit& out) {
  std::vector<GemmSample> samples;
  for (const Measurement* m : points) {
    const double mn = static_cast<double>(m->m) * static_cast<double>(m->n);
    const double operands =
        static_cast<double>(m->m) * static_cast<double>(m->k) + static_cast<double>(m->k) * static_cast<double>(m->n);
    samples.push_back({{m->m, m->n, m->k}, m->median_s, operands * 1.0 + mn * 2.0});  // e4m3 in, bf16 out
  }
  const sim::CostProfile bf16 = out.profile;
  double efficiency = 0;
  out.fits.push_back(measure<double>(
      "gemm_fp8", points,
      [&](const std::vector<size_t>& index) {
        std::vector<GemmSample> chosen;
        for (size_t i : index) chosen.push_back(samples[i]);
        return fit_fp8_efficiency(chosen, gpu, bf16);
      },
      [&](const double& e, size_t i) {
        sim::CostProfile profile = bf16;
        profile.gemm.fp8_efficiency = e;
        return sim::CostModel(gpu, profile).gemm_seconds(samples[i].shape, samples[i].bytes, true);
      },
      &efficiency));
  out.profile.gemm.fp8_efficiency = efficiency;
  out.fp8_source = "fitted on fp8 GEMMs (e4m3 operands)";
}

// Where a GPU has no fp8 GEMM measurements: its bf16 efficiency times the ratio of its fp8 and bf16
// max-achievable-matmul fractions of peak (gemm_mamf.csv; H200 and H800 share the H100 die, and
// H200's bf16 fraction is not published: H100's is used).
struct MamfFractions {
  const char* gpu;
  double bf16_pct;
  double fp8_pct;
};
constexpr MamfFractions kMamf[] = {
    {"h100-sxm", 80.3, 70.9}, {"h800-sxm", 80.3, 70.9}, {"h200-sxm", 80.3, 73.4}, {"b200", 77.6, 76.3}};

void derive_fp8_efficiency(const sim::GpuSpec& gpu, ProfileFit& out) {
  for (const MamfFractions& f : kMamf) {
    if (gpu.name != f.gpu) continue;
    out.profile.gemm.fp8_efficiency = out.profile.gemm.efficiency * f.fp8_pct / f.bf16_pct;
    out.fp8_source = "not fitted: the bf16 efficiency x " + model::format_number("%.1f", f.fp8_pct) + " / " +
                     model::format_number("%.1f", f.bf16_pct) +
                     ", the fp8 and bf16 max-achievable-matmul fractions of peak (gemm_mamf.csv)";
  }
}

// Peer copies at two sizes or more: the copy engine's step latency and efficiency. Each copy's bytes
// are scaled to the GPU's NVLink so that copies over links of other nominal rates share one line.
void fit_copy_steps(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu, ProfileFit& out) {
  const double link = gpu.nvlink_Bps;
  std::vector<RingSample> samples;
  for (const Measurement* m : points) {
    const double nominal = m->spec_GBps > 0 ? m->spec_GBps * 1e9 : link;
    samples.push_back({1, m->bytes * link / nominal, m->median_s});
  }
  out.fits.push_back(measure<sim::TransportParams>(
      "copy_engine", points,
      [&](const std::vector<size_t>& index) { return fit_copy_step(subset(samples, index), link).params; },
      [&](const sim::TransportParams& p, size_t i) {
        return p.step_latency_s + samples[i].tensor_bytes / (link * p.link_efficiency);
      },
      &out.profile.copy_engine));
  out.copy_latency_fitted = true;
}

// The SMs an NCCL kernel takes from a concurrent GEMM, from overlap points (a GEMM beside a
// collective): every count from 1 to half the GPU's SMs is simulated and the one whose predicted
// overlapped GEMM times have the least squared log error is kept (an exhaustive search over integers).
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
// per cross-stream wait from the extra time of chains alternating between two streams. Each is a
// mean of per-kernel times; a chain's predicted time is kernels x (launch + its waits).
void fit_launches(const std::vector<const Measurement*>& points, ProfileFit& out) {
  const auto per_kernel = [](const Measurement* m) { return m->median_s / m->kernels; };
  double same = 0, cross = 0;
  int same_n = 0, cross_n = 0;
  for (const Measurement* m : points) {
    (m->pattern == "same_stream" ? same : cross) += per_kernel(m);
    ++(m->pattern == "same_stream" ? same_n : cross_n);
  }
  if (same_n > 0) out.profile.host_launch_s = same / same_n;
  if (same_n > 0 && cross_n > 0) out.profile.stream_wait_s = std::max(0.0, cross / cross_n - out.profile.host_launch_s);
  ComponentFit c;
  c.name = "launch";
  for (const Measurement* m : points) {
    const double waits = m->pattern == "cross_stream" ? 1.0 : 0.0;
    const double predicted = m->kernels * (out.profile.host_launch_s + waits * out.profile.stream_wait_s);
    c.errors.push_back({m->origin, 100.0 * (predicted / m->median_s - 1.0)});
    c.max_abs_error_pct = std::max(c.max_abs_error_pct, std::abs(c.errors.back().error_pct));
  }
  out.fits.push_back(c);
}

// A transport fit of `kind` (ring, one_shot, nvls): the fitter and the closed form of its time.
void fit_transport(const std::string& name, const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu,
                   sim::TransportParams& target, ProfileFit& out) {
  Group group{points};
  const std::vector<RingSample> samples = group.samples();
  const double link = gpu.nvlink_Bps;
  const auto fit = [&](const std::vector<size_t>& index) {
    const std::vector<RingSample> chosen = subset(samples, index);
    if (name == "nccl") return fit_ring(chosen, link).params;
    if (name == "one_shot") return fit_one_shot(chosen, link).params;
    if (name == "two_shot") return fit_two_shot(chosen, link).params;
    return fit_nvls(chosen, link).params;
  };
  const auto predict = [&](const sim::TransportParams& p, size_t i) {
    const RingSample& s = samples[i];
    const double bw = link * p.link_efficiency;
    const double n = s.ranks;
    if (name == "nccl") return (n - 1) * (p.step_latency_s + s.tensor_bytes / (n * bw));
    if (name == "one_shot") return p.step_latency_s + (n - 1) * s.tensor_bytes / bw;
    if (name == "two_shot") return 2 * (p.step_latency_s + (n - 1) * s.tensor_bytes / (n * bw));
    return p.step_latency_s + s.tensor_bytes / bw;
  };
  out.fits.push_back(measure<sim::TransportParams>(name, points, fit, predict, &target));
}

// The NCCL ring in one or two protocol regimes (LL / LL128 for small messages, Simple for large).
void fit_ring_protocols(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu, ProfileFit& out) {
  const std::vector<RingSample> samples = Group{points}.samples();
  const auto fit = [&](const std::vector<size_t>& index) {
    return fit_ring_regimes(subset(samples, index), gpu.nvlink_Bps);
  };
  const auto predict = [&](const RingRegimes& r, size_t i) {
    return ring_regimes_seconds(r, samples[i], gpu.nvlink_Bps);
  };
  RingRegimes regimes;
  out.fits.push_back(measure<RingRegimes>("nccl", points, fit, predict, &regimes));
  out.profile.nccl = regimes.simple;
  out.profile.nccl_small = regimes.has_small ? std::optional<sim::TransportParams>(regimes.small) : std::nullopt;
}

// The network transport of multi-node ring all-reduces (one rank and node count).
void fit_network(const std::vector<const Measurement*>& points, ProfileFit& out) {
  const Measurement& first = *points.front();
  const double rails = static_cast<double>(first.ranks / first.nodes);
  const double nic_Bps = first.nic_GBps > 0 ? first.nic_GBps * 1e9 : sim::kDefaultRailNicBps;
  const double node_nic_Bps = rails * nic_Bps;
  const std::vector<RingSample> samples = Group{points}.samples();
  const auto fit = [&](const std::vector<size_t>& index) {
    return fit_network_ring(subset(samples, index), node_nic_Bps).params;
  };
  const auto predict = [&](const sim::TransportParams& p, size_t i) {
    const double n = samples[i].ranks;
    return 2 * (n - 1) * (p.step_latency_s + samples[i].tensor_bytes / (n * node_nic_Bps * p.link_efficiency));
  };
  out.profile.network = sim::TransportParams{};
  out.fits.push_back(measure<sim::TransportParams>("network", points, fit, predict, &*out.profile.network));
}

// NCCL's tree all-reduce, on every tree point of this GPU (any rank and node count).
void fit_tree_section(const std::vector<const Measurement*>& points, const sim::GpuSpec& gpu, ProfileFit& out) {
  std::vector<TreeSample> samples;
  for (const Measurement* m : points) samples.push_back({m->ranks, m->nodes, m->nic_GBps * 1e9, m->bytes, m->median_s});
  const sim::CostProfile base = out.profile;
  const auto fit = [&](const std::vector<size_t>& index) {
    std::vector<TreeSample> chosen;
    for (size_t i : index) chosen.push_back(samples[i]);
    return fit_tree(chosen, gpu, base).params;
  };
  const auto predict = [&](const sim::TransportParams& p, size_t i) { return tree_seconds(p, samples[i], gpu, base); };
  out.profile.tree = sim::TransportParams{};
  out.fits.push_back(measure<sim::TransportParams>("tree", points, fit, predict, &*out.profile.tree));
}

}  // namespace

ProfileFit fit_profile(const std::vector<Measurement>& measurements, const sim::GpuSpec& gpu,
                       const sim::CostProfile* base, const std::string& base_name) {
  ProfileFit out;
  if (base) {
    out.profile = *base;
    out.base = base_name;
  } else {
    out.profile.copy_engine.step_latency_s = kAssumedCopyEngineStepLatency_s;
    out.profile.host_launch_s = kAssumedHostLaunch_s;
  }
  out.profile.gpu = gpu.name;
  std::vector<const Measurement*> gemms, fp8_gemms, one_shot, two_shot, nvls, copies, trees, overlaps, launches;
  std::map<int, std::vector<const Measurement*>> rings;  // by rank count
  // Multi-node ring all-reduces, by (GPU, ranks, nodes, NIC): one system per fit.
  std::map<std::tuple<std::string, int, int, double>, std::vector<const Measurement*>> network;
  int declined_ranks = 0;  // the most ranks NCCL ran a ring on with NVLS enabled
  for (const Measurement& m : measurements) {
    if (!m.correct) continue;  // a point that failed its correctness check calibrates nothing
    if (m.kind == "collective" && m.collective == "allreduce" && m.algorithm == "tree") {
      // Its hops run on NVLink inside nodes: this GPU's points only.
      if (m.gpu == gpu.name) {
        trees.push_back(&m);
      } else {
        ++out.other_gpu_points;
      }
      continue;
    }
    if (m.nodes > 1) {
      if (m.collective == "allreduce" && (m.algorithm == "ring" || m.algorithm == "unknown")) {
        network[{m.gpu, m.ranks, m.nodes, m.nic_GBps}].push_back(&m);
      }
      continue;  // nothing inside one node is fitted on points across nodes
    }
    if (m.gpu != gpu.name) {
      ++out.other_gpu_points;
      continue;
    }
    if (m.details.value("nvls_declined", false)) {
      declined_ranks = std::max(declined_ranks, m.ranks);
      out.nvls_declined.push_back(m.origin);
    }
    if (m.kind == "gemm" && m.dtype == "bf16") gemms.push_back(&m);
    if (m.kind == "gemm" && m.dtype == "fp8") fp8_gemms.push_back(&m);
    if (m.kind == "overlap" && model::collective_kind_named(m.pattern)) overlaps.push_back(&m);
    if (m.kind == "launch") launches.push_back(&m);
    if (m.kind == "memcpy" && m.path == "peer") copies.push_back(&m);
    if (m.kind != "collective") continue;
    const bool gather_or_scatter = m.collective == "allgather" || m.collective == "reducescatter";
    if (gather_or_scatter && (m.algorithm == "ring" || m.algorithm == "unknown")) rings[m.ranks].push_back(&m);
    if (m.collective == "allreduce" && m.algorithm == "one_shot") one_shot.push_back(&m);
    if (m.collective == "allreduce" && m.algorithm == "two_shot") two_shot.push_back(&m);
    if (m.collective == "allreduce" && m.algorithm == "nvls") nvls.push_back(&m);
  }
  if (!gemms.empty()) {
    const std::optional<double> kept_fp8 = out.profile.gemm.fp8_efficiency;
    fit_gemms(gemms, gpu, out);
    out.profile.gemm.fp8_efficiency = kept_fp8;
  } else {
    out.not_fitted.push_back("gemm");
  }
  if (!fp8_gemms.empty() && gpu.peak_fp8_flops > 0) {
    fit_fp8_gemms(fp8_gemms, gpu, out);
  } else {
    derive_fp8_efficiency(gpu, out);  // from this GPU's published fractions, where known
  }
  // The ring fit needs one rank count: the one with the most points.
  const auto ring = std::max_element(rings.begin(), rings.end(),
                                     [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  if (ring != rings.end() && two_sizes(ring->second)) {
    fit_ring_protocols(ring->second, gpu, out);
  } else {
    out.not_fitted.push_back("nccl");
  }
  if (two_sizes(one_shot)) {
    fit_transport("one_shot", one_shot, gpu, out.profile.one_shot, out);
  } else {
    out.not_fitted.push_back("one_shot");
  }
  if (two_sizes(two_shot)) {
    out.profile.two_shot = sim::TransportParams{};
    fit_transport("two_shot", two_shot, gpu, *out.profile.two_shot, out);
  }
  if (two_sizes(nvls)) {
    out.profile.nvls = sim::TransportParams{};
    fit_transport("nvls", nvls, gpu, *out.profile.nvls, out);
  }
  if (declined_ranks > 0) out.profile.nvls_min_ranks = declined_ranks + 1;
  if (two_sizes(trees)) fit_tree_section(trees, gpu, out);
  const auto widest = std::max_element(network.begin(), network.end(),
                                       [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  if (widest != network.end() && two_sizes(widest->second)) {
    fit_network(widest->second, out);  // optional, like nvls and two_shot: absent unless measured
  }
  if (!launches.empty()) fit_launches(launches, out);
  // GEMMs beside collectives the simulator can rebuild (fp8 ones need an fp8 rate).
  std::vector<const Measurement*> sm_points;
  for (const Measurement* m : overlaps) {
    if (composite_not_modelled(*m, sim::CostModel(gpu, out.profile)).empty()) sm_points.push_back(m);
  }
  if (!sm_points.empty()) fit_sm_share(sm_points, gpu, out);
  if (two_sizes(copies)) {
    fit_copy_steps(copies, gpu, out);
  } else if (!copies.empty()) {
    // One size: the efficiency alone (its step latency stays assumed).
    auto nominal_GBps = [&gpu](const Measurement* m) { return m->spec_GBps > 0 ? m->spec_GBps : gpu.nvlink_Bps / 1e9; };
    double sum = 0;
    for (const Measurement* m : copies) sum += m->algbw_GBps() / nominal_GBps(m);
    out.profile.copy_engine.link_efficiency = sum / static_cast<double>(copies.size());
    ComponentFit c;
    c.name = "copy_engine";
    for (const Measurement* m : copies) {
      const double predicted = m->bytes / (nominal_GBps(m) * 1e9 * out.profile.copy_engine.link_efficiency);
      c.errors.push_back({m->origin, 100.0 * (predicted / m->median_s - 1.0)});
      c.max_abs_error_pct = std::max(c.max_abs_error_pct, std::abs(c.errors.back().error_pct));
    }
    out.fits.push_back(c);
  } else {
    out.not_fitted.push_back("copy_engine");
  }
  if (out.fits.empty()) {
    throw InputError(
        "these measurements calibrate nothing: fits need bf16 GEMMs, ring (or unknown) all-gathers / "
        "reduce-scatters, one-shot, two-shot, NVLS or tree all-reduces, ring all-reduces across nodes, or peer copies "
        "(all-reduces of unknown algorithm inside one node, all-to-alls and send/recvs are not fitted yet), of " +
        gpu.name + " (" + std::to_string(out.other_gpu_points) +
        " points of other GPUs), each collective at two message sizes at least");
  }
  return out;
}

std::string profile_yaml(const ProfileFit& fit, const std::string& target_gpu, const std::vector<std::string>& files) {
  const sim::CostProfile& p = fit.profile;
  std::string files_text;
  for (const std::string& f : files) files_text += (files_text.empty() ? "" : " ") + f;
  std::string y = "# Cost profile for " + target_gpu + ", written by `tpsim calibrate " + files_text + " --gpu " +
                  target_gpu + (fit.base.empty() ? "" : " --base " + fit.base) +
                  "`.\n# Fractions of peak are relative to " + fit.profile.gpu +
                  "'s preset; fitted values list their measurements' errors, the others say where they come from.\n";
  y += "gpu: " + target_gpu + "\n";
  const auto fit_of = [&](const std::string& name) -> const ComponentFit* {
    for (const ComponentFit& c : fit.fits) {
      if (c.name == name) return &c;
    }
    return nullptr;
  };
  const auto fit_block = [&](const std::string& name) {
    const ComponentFit* c = fit_of(name);
    if (!c && !fit.base.empty()) return "  fit: \"not fitted here: as in " + fit.base + "\"\n";
    if (!c) return std::string("  source: \"not fitted: no measurements; default value\"\n");
    std::string b = "  fit:\n    points: " + std::to_string(c->errors.size()) +
                    "\n    max_abs_error_pct: " + model::format_number("%.1f", c->max_abs_error_pct) + "\n";
    if (c->held_out_max_abs_error_pct >= 0) {
      b += "    held_out_max_abs_error_pct: " + model::format_number("%.1f", c->held_out_max_abs_error_pct) + "\n";
    }
    b += "    error_pct_per_point:\n";
    for (const PointError& e : c->errors)
      b += "      \"" + e.origin + "\": " + model::format_number("%.1f", e.error_pct) + "\n";
    return b;
  };
  const auto sms_source = [&]() -> std::string {
    const ComponentFit* c = fit_of("nccl_sms");
    if (!c) return fit.base.empty() ? "assumed (measure with real/ overlap)" : "as in " + fit.base;
    return "fitted on " + std::to_string(c->errors.size()) +
           " GEMMs beside collectives (overlapped GEMM time, max error " +
           model::format_number("%.1f%%", c->max_abs_error_pct) + ")";
  };
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
  y += "gemm:\n  efficiency: " + model::format_number("%.6g", p.gemm.efficiency) + fp8 +
       "\n  hbm_efficiency: " + model::format_number("%.6g", p.gemm.hbm_efficiency) +
       "\n  overhead_us: " + model::format_number("%.6g", p.gemm.overhead_s * 1e6) +
       "\n  tile_m: " + std::to_string(p.gemm.tile_m) + "\n  tile_n: " + std::to_string(p.gemm.tile_n) +
       "\n  small_m_tile_m: " + std::to_string(p.gemm.small_m_tile_m) +
       "\n  min_k_per_split: " + std::to_string(p.gemm.min_k_per_split) + "\n" + fit_block("gemm");
  y += "memory:\n  hbm_efficiency: " + model::format_number("%.6g", p.memory.hbm_efficiency) +
       "\n  overhead_us: " + model::format_number("%.6g", p.memory.overhead_s * 1e6) +
       "\n  source: \"the memory-bound rows of the GEMM fit\"\n";
  y += "attention:\n  efficiency: " + model::format_number("%.6g", p.attention.efficiency) +
       "\n  source: \"not fitted: FlashAttention-3 (Shah et al. 2024) reports about 600 TFLOP/s causal BF16 forward on "
       "H100 SXM, head dim 128\"\n";
  y += "nccl:\n  step_latency_us: " + model::format_number("%.6g", p.nccl.step_latency_s * 1e6) +
       "\n  link_efficiency: " + model::format_number("%.6g", p.nccl.link_efficiency) +
       "\n  sms: " + std::to_string(p.nccl_sms) +
       "\n  source: \"ring all-gather / reduce-scatter points (Simple protocol regime); sms " + sms_source() + "\"\n";
  if (p.nccl_small) {
    y += "  small_messages:\n    step_latency_us: " + model::format_number("%.6g", p.nccl_small->step_latency_s * 1e6) +
         "\n    link_efficiency: " + model::format_number("%.6g", p.nccl_small->link_efficiency) +
         "\n    source: \"the low-latency protocol regime (LL / LL128) of the same fit: the faster regime runs\"\n";
  }
  y += fit_block("nccl");
  y += "copy_engine:\n  step_latency_us: " + model::format_number("%.6g", p.copy_engine.step_latency_s * 1e6) +
       "\n  link_efficiency: " + model::format_number("%.6g", p.copy_engine.link_efficiency) + "\n  source: \"" +
       (fit.copy_latency_fitted ? std::string("peer copies of several sizes: step latency and efficiency")
                                : std::string("step latency assumed (measure with real/ memcpy)")) +
       "\"\n" + fit_block("copy_engine");
  y += "one_shot:\n  step_latency_us: " + model::format_number("%.6g", p.one_shot.step_latency_s * 1e6) +
       "\n  link_efficiency: " + model::format_number("%.6g", p.one_shot.link_efficiency) +
       "\n  max_bytes: " + model::format_number("%.0f", p.one_shot_max_bytes) +
       "\n  source: \"max_bytes is vLLM's custom all-reduce default limit of 8 MiB\"\n" + fit_block("one_shot");
  if (p.two_shot) {
    y += "two_shot:\n  step_latency_us: " + model::format_number("%.6g", p.two_shot->step_latency_s * 1e6) +
         "\n  link_efficiency: " + model::format_number("%.6g", p.two_shot->link_efficiency) +
         "\n  max_bytes: " + model::format_number("%.0f", p.two_shot_max_bytes) +
         "\n  source: \"all-reduce points run as two-shot (custom all-reduce kernels); max_bytes as one_shot's\"\n" +
         fit_block("two_shot");
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
    y += "nvls:\n  step_latency_us: " + model::format_number("%.6g", p.nvls->step_latency_s * 1e6) +
         "\n  link_efficiency: " + model::format_number("%.6g", p.nvls->link_efficiency) + min_ranks +
         "\n  source: \"all-reduce points run as NVLS (measured or inferred, see their provenance)\"\n" +
         fit_block("nvls");
  }
  if (p.network) {
    y += "network:\n  step_latency_us: " + model::format_number("%.6g", p.network->step_latency_s * 1e6) +
         "\n  link_efficiency: " + model::format_number("%.6g", p.network->link_efficiency) +
         "\n  source: \"ring all-reduces across nodes (or of unknown algorithm there): each step's hop between "
         "nodes, striped over every NIC of the node\"\n" +
         fit_block("network");
  }
  if (p.tree) {
    y += "tree:\n  step_latency_us: " + model::format_number("%.6g", p.tree->step_latency_s * 1e6) +
         "\n  link_efficiency: " + model::format_number("%.6g", p.tree->link_efficiency) +
         "\n  chunk_bytes: " + model::format_number("%.0f", p.tree_chunk_bytes) +
         "\n  source: \"all-reduces run as NCCL's tree (every hop, NVLink and NIC); chunk_bytes assumed: NCCL's 4 MiB "
         "buffer over 8 steps, 8 channels\"\n" +
         fit_block("tree");
  }
  const ComponentFit* launch_fit = fit_of("launch");
  y +=
      "launch:\n  host_us: " + model::format_number("%.6g", p.host_launch_s * 1e6) +
      "\n  stream_wait_us: " + model::format_number("%.6g", p.stream_wait_s * 1e6) + "\n  source: \"" +
      (launch_fit ? std::string("chains of empty kernels on one stream and alternating between two (tpsim-real launch)")
                  : std::string("assumed (eager-mode launch of one kernel or NCCL call; a cross-stream wait 0 until "
                                "measured with tpsim-real launch)")) +
      "; workload.cuda_graphs removes both\"\n" + (launch_fit ? fit_block("launch") : std::string());
  return y;
}

}  // namespace tpsim::calibrate
