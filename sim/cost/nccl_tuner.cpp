// NCCL 2.27's tuning model: the channel graphs its topology search finds on tpsim's fabrics, and the
// latency and bandwidth of each (algorithm, protocol) from its constants. Every constant below is NCCL
// 2.27.7's (src/graph/tuning.cc, search.cc, topo.h); where tpsim's fabric leaves NCCL's input unknown
// (CPU vendor, NIC latency) the assumption is named.
#include "sim/cost/nccl_tuner.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "base/input_error.hpp"
#include "sim/cost/collective_time.hpp"

namespace tpsim::sim {
namespace {

using model::CollectiveAlgorithm;
using model::CollectiveKind;
using model::Protocol;

// Index order of NCCL's tables.
enum Algo { kTree = 0, kRing = 1, kNvls = 2 };
enum Proto { kLL = 0, kLL128 = 1, kSimple = 2 };
enum Hw { kNvlink = 0, kPci = 1, kNet = 2 };
enum Arch { kVolta = 0, kAmpere = 1, kHopper = 2, kBlackwell = 3 };
using Table = std::array<std::array<double, 3>, 3>;  // [algo][proto]

// baseLat: per call, us.
constexpr Table kBaseLatency_us = {{{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}}};
// hwLat: per step (ring) or per hop (tree), us, by the link the algorithm's graph uses.
constexpr std::array<Table, 3> kHwLatency_us = {{
    {{{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 25}}},   // NVLink
    {{{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 0}}},     // PCI
    {{{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}, {0, 0, 18}}},  // network
}};
// llMaxBws [arch or CPU][nodes 1 / 2 / more], GB/s. Multi-node rows are by CPU vendor: row 0 (Intel and
// others) is assumed, as tpsim does not model the host CPU.
constexpr std::array<std::array<double, 3>, 4> kLlMaxBw = {
    {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}}};
constexpr std::array<std::array<double, 3>, 4> kPerChannelMaxRingLL128Bw = {
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {2 * 36.7, 2 * 36.7, 2 * 36.7}}};
constexpr std::array<std::array<double, 3>, 4> kPerChannelMaxTreeLL128Bw = {
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {2 * 36.7, 2 * 36.7, 2 * 29.0}}};
constexpr std::array<std::array<double, 3>, 4> kPerChannelMaxTreeBw = {
    {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {2 * 38.7, 2 * 41.4, 2 * 36.0}}};
// Tree all-reduce bandwidth corrections by log2(bytes / 64), [proto][0..22].
constexpr std::array<std::array<double, 23>, 3> kTreeCorrection = {{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
}};

// The speeds (GB/s per channel) NCCL's search tries, fastest first (search.cc).
const std::vector<double>& intra_speeds(int cc) {
  static const std::vector<double> sm100 = {90, 80, 70, 60, 50, 40, 30, 24, 20, 19, 18};
  static const std::vector<double> sm90 = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
  static const std::vector<double> older = {40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
  return cc >= 100 ? sm100 : cc >= 90 ? sm90 : older;
}
const std::vector<double>& inter_speeds(int cc) {
  static const std::vector<double> sm100 = {96,   48, 45.1, 42, 40, 30,  24,  22,  20,
                                            17.5, 15, 12,   6,  3,  2.4, 1.2, .24, .12};
  static const std::vector<double> sm90 = {48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, .24, .12};
  static const std::vector<double> older = {48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, .24, .12};
  return cc >= 100 ? sm100 : cc >= 90 ? sm90 : older;
}

// MAXCHANNELS / 2: the most channels a ring search keeps (device.h, init.cc).
constexpr int kMaxRingChannels = 32;
// NCCL_MAX_NVLS_ARITY (device.h).
constexpr int kMaxNvlsArity = 32;

Arch arch_of(int cc) {
  return cc >= 100 ? kBlackwell : cc >= 90 ? kHopper : cc >= 80 ? kAmpere : kVolta;
}

// What NCCL's topology gives one GPU's NVLink: links x NCCL's per-link bandwidth (topo.h: SM80 20.0,
// SM90 20.6, SM100 40.1 GB/s), with links counted at 25 GB/s each way (NVLink 3 and 4) or 50 (NVLink 5).
double nccl_nvlink_GBps(const GpuSpec& gpu) {
  const int cc = gpu.compute_capability;
  const double link_GBps = cc >= 100 ? 50.0 : 25.0;
  const double per_link = cc >= 100 ? 40.1 : cc >= 90 ? 20.6 : 20.0;
  return std::round(gpu.nvlink_Bps / 1e9 / link_GBps) * per_link;
}

// NCCL's PCIe link: lanes x the GT/s rate x 0.75 / 8 (topo.cc: "32 GT/s" is 240 x 100 Mb/s per lane, and
// width x speed / 80 GB/s); tpsim's pcie_GBps carries the 128/130 encoding, which is undone here.
double nccl_pci_GBps(const GpuSpec& gpu) {
  return gpu.pcie_Bps / 1e9 * 130.0 / 128.0 * 0.75;
}

// NCCL duplicates the channels of a graph whose bandwidth per channel allows it (ncclTopoDupChannels).
NcclGraph duplicated(NcclGraph g, int cc) {
  const double bw = g.bw_intra_GBps;
  if (bw < 25.0 || (cc > 80 && bw < 50.0 && g.channels > 4)) return g;
  const int channels = std::min(2 * g.channels, kMaxRingChannels);
  const int factor = (channels + g.channels - 1) / g.channels;
  g.bw_intra_GBps /= factor;
  g.bw_inter_GBps /= factor;
  g.channels = channels;
  return g;
}

// The ring search: the most bandwidth (channels x speed) at the fastest speed that fits; lower speeds
// are tried while they stay above 0.49 of the best, then channels are duplicated and, at that channel
// count, the speed raised while it fits. `fits(channels, speed)` says whether the links carry it.
template <typename Fits>
NcclGraph search_ring(const std::vector<double>& speeds, Fits fits, int cc) {
  NcclGraph best;
  size_t i = 0;
  while (i + 1 < speeds.size() && !fits(1, speeds[i])) ++i;
  for (; i < speeds.size(); ++i) {
    int channels = 0;
    while (channels < kMaxRingChannels && fits(channels + 1, speeds[i])) ++channels;
    if (channels > 0 && channels * speeds[i] > best.channels * best.bw_intra_GBps) {
      best = {channels, speeds[i], speeds[i]};
    }
    if (best.channels == kMaxRingChannels) break;
    if (best.channels > 0 && !(i + 1 < speeds.size() && speeds[i + 1] / best.bw_intra_GBps > .49)) break;
  }
  if (best.channels == 0) return best;
  best = duplicated(best, cc);
  for (double speed : speeds) {  // pass 2: a faster speed at the same channel count, the fastest that fits
    if (speed > best.bw_intra_GBps && fits(best.channels, speed)) {
      best.bw_intra_GBps = best.bw_inter_GBps = speed;
      break;
    }
  }
  return best;
}

NcclGraph ring_graph(const GpuSpec& gpu, const Fabric& fabric, int nodes, double link_GBps) {
  const int cc = gpu.compute_capability;
  if (nodes == 1) {
    // Each channel's ring crosses every GPU's link once each way.
    return search_ring(
        intra_speeds(cc), [&](int c, double s) { return c * s <= link_GBps + 1e-9; }, cc);
  }
  // Across nodes each channel enters a node through one NIC and leaves through another, and passes the
  // GPUs between on NVLink; a NIC carries floor(nic / speed) channels each way (one NIC per GPU here).
  const double nic_GBps = fabric.nic_Bps / 1e9;
  const int nics = fabric.gpus_per_node;
  return search_ring(
      inter_speeds(cc),
      [&](int c, double s) {
        return s <= nic_GBps && c <= nics * static_cast<int>(nic_GBps / s) && (c - 1) * s <= link_GBps + 1e-9;
      },
      cc);
}

// Trees take the ring's channel count. Inside one node the fastest speed at which those channels fit
// the links; across nodes the ring's speed, with the per-node bandwidth raised while below twice the
// network's (search.cc pass 2 for trees). Assumed: the balanced tree pattern is found.
NcclGraph tree_graph(const GpuSpec& gpu, const NcclGraph& ring, int nodes, double link_GBps) {
  const int cc = gpu.compute_capability;
  const auto fits = [&](double s) { return ring.channels * s <= link_GBps + 1e-9; };
  if (nodes == 1) {
    for (double s : intra_speeds(cc)) {
      if (fits(s)) return duplicated(NcclGraph{ring.channels, s, s}, cc);
    }
    return NcclGraph{};
  }
  const std::vector<double>& speeds = inter_speeds(cc);
  NcclGraph tree{ring.channels, ring.bw_inter_GBps, ring.bw_inter_GBps};
  size_t i = 0;
  while (i < speeds.size() && speeds[i] > tree.bw_intra_GBps) ++i;
  while (i > 0 && tree.bw_intra_GBps < 2 * tree.bw_inter_GBps && fits(speeds[i - 1])) tree.bw_intra_GBps = speeds[--i];
  return tree;
}

// NVLS inside one node: a channel per GPU (up to NVLS's arity); each GPU's link carries every channel and
// twice the one it heads, so (channels + 1) x speed must fit. The network-side speed is then raised while
// below twice the node's (search.cc pass 2 for NVLS); inside one node nothing limits it but the speeds.
NcclGraph nvls_graph(const GpuSpec& gpu, int ranks, double link_GBps) {
  const std::vector<double>& speeds = intra_speeds(gpu.compute_capability);
  NcclGraph g;
  g.channels = std::min(kMaxNvlsArity, ranks);
  size_t i = 0;
  while (i < speeds.size() && (g.channels + 1) * speeds[i] > link_GBps + 1e-9) ++i;
  if (i == speeds.size() || g.channels < 2) return NcclGraph{};
  g.bw_intra_GBps = g.bw_inter_GBps = speeds[i];
  while (i > 0 && g.bw_inter_GBps < 2 * g.bw_intra_GBps) g.bw_inter_GBps = speeds[--i];
  return g;
}

int log2i(double x) {
  int n = 0;
  while (x >= 2) {
    x /= 2;
    ++n;
  }
  return n;
}

CollectiveAlgorithm algorithm_of(int a) {
  return a == kTree ? CollectiveAlgorithm::kTree : a == kRing ? CollectiveAlgorithm::kRing : CollectiveAlgorithm::kNvls;
}
Protocol protocol_of(int p) {
  return p == kLL ? Protocol::kLL : p == kLL128 ? Protocol::kLL128 : Protocol::kSimple;
}

}  // namespace

NcclSystem nccl_system(const GpuSpec& gpu, const Fabric& fabric, int ranks) {
  if (gpu.compute_capability <= 0) {
    throw InputError("GPU " + gpu.name +
                     " has no compute_capability (8.0, 9.0, 10.0, ...): NCCL's tuner, which chooses the algorithm of "
                     "`nccl` collectives, is per architecture; add it to the GPU, or choose the algorithm by name");
  }
  NcclSystem s;
  s.compute_capability = gpu.compute_capability;
  s.ranks = ranks;
  s.nodes = fabric.spans_nodes(ranks) ? ranks / fabric.gpus_per_node : 1;
  s.nvlink = fabric.kind != FabricKind::kPcie;
  s.ll128 = s.nvlink;  // LL128 needs NVLink (or NVSwitch) paths inside the node (typeIntra <= PATH_NVB)
  const double link_GBps = s.nvlink ? nccl_nvlink_GBps(gpu) : nccl_pci_GBps(gpu);
  s.ring = ring_graph(gpu, fabric, s.nodes, link_GBps);
  s.tree = tree_graph(gpu, s.ring, s.nodes, link_GBps);
  s.nvls = fabric.in_switch_reduction && s.nvlink && gpu.compute_capability >= 90 && s.nodes == 1;
  if (s.nvls) s.nvls_graph = nvls_graph(gpu, ranks, link_GBps);
  if (s.nvls_graph.channels < 2) s.nvls = false;
  return s;
}

std::vector<NcclOption> nccl_ranking(const NcclSystem& s, CollectiveKind kind, double bytes, Protocol only) {
  const bool all_reduce = kind == CollectiveKind::kAllReduce;
  if (!all_reduce && kind != CollectiveKind::kAllGather && kind != CollectiveKind::kReduceScatter) return {};
  const int n = s.ranks;
  const int nodes = s.nodes;
  const double ppn = static_cast<double>(n) / nodes;
  const int steps = ring_step_count(kind, n);  // the ring's steps, as the plans count them
  const Arch arch = arch_of(s.compute_capability);
  const int by_nodes = nodes <= 2 ? nodes - 1 : 2;
  const double ll_max = kLlMaxBw[nodes == 1 ? arch : 0][by_nodes];
  const Hw intra_hw = s.nvlink ? kNvlink : kPci;
  // Assumed: an Intel or Arm host (NCCL's network overhead 1 us per step; AMD hosts pay 2).
  constexpr double kNetOverhead_us = 1.0;
  std::vector<NcclOption> options;
  for (int a : {kTree, kRing, kNvls}) {
    if (a == kTree && !all_reduce) continue;
    if (a == kNvls && (!s.nvls || (!all_reduce && ppn > kMaxNvlsArity))) continue;
    const NcclGraph& g = a == kTree ? s.tree : a == kRing ? s.ring : s.nvls_graph;
    if (g.channels == 0) continue;
    for (int p : {kLL, kLL128, kSimple}) {
      if (a == kNvls && p != kSimple) continue;
      if (p == kLL128 && !s.ll128) continue;
      if (only != Protocol::kAuto && protocol_of(p) != only) continue;
      double bw = nodes <= 2 ? g.bw_intra_GBps : g.bw_inter_GBps;
      if (a == kNvls) {
        bw = all_reduce ? std::min(g.bw_intra_GBps, g.bw_inter_GBps)
                        : std::min(g.bw_intra_GBps * (ppn - 1) / ppn, g.bw_inter_GBps * 0.9);
      }
      double bus = g.channels * bw;
      if (a == kRing && p == kLL) bus = std::min(ll_max, bus * .5);
      if (a == kRing && p == kLL128) bus = std::min(bus * .92, g.channels * kPerChannelMaxRingLL128Bw[arch][by_nodes]);
      if (a == kTree) bus = std::min(bus * .92, g.channels * kPerChannelMaxTreeBw[arch][by_nodes]);
      if (a == kTree && p == kLL) bus = std::min(bus / 3.8, ll_max);
      if (a == kTree && p == kLL128) {
        bus = std::min(bus * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                       g.channels * kPerChannelMaxTreeLL128Bw[arch][by_nodes]);
      }
      // Bus to algorithm bandwidth; NVLS and tree all-gathers / reduce-scatters keep it.
      if (a == kRing) bus *= static_cast<double>(n) / steps;
      if (a == kNvls && all_reduce) bus *= 5.0 / 6.0;
      if (a == kTree) bus *= .5;
      double latency = kBaseLatency_us[a][p];
      const double intra_lat = kHwLatency_us[intra_hw][a][p];
      const double inter_lat = kHwLatency_us[kNet][ppn == 1 ? kTree : a][p];  // NIC latency assumed 0
      if (a == kRing) {
        const double overhead = nodes > 1 ? kNetOverhead_us * (p == kSimple ? 3 : 1) : 0;
        const int inter_steps = nodes == 1 ? 0 : all_reduce ? 2 * (nodes - 1) : nodes - 1;
        latency += (steps - inter_steps) * std::max(intra_lat, overhead) + inter_steps * inter_lat;
      } else if (a == kTree) {
        latency += 2 * ((ppn - 1) * intra_lat + log2i(nodes) * inter_lat);
      } else {
        latency = intra_lat;
      }
      // ncclTopoGetAlgoTime's corrections.
      double bandwidth = bus;
      const int log_size = log2i(bytes / 64);
      if (a == kTree && bytes >= 64 && log_size < 23) bandwidth *= kTreeCorrection[p][log_size];
      if (a == kRing && p == kSimple && nodes > 1 && all_reduce && bytes / (g.channels * n) >= 64) {
        latency *= s.compute_capability < 80 ? 1.9 : 1.4;  // "plateau effect of ring"
      }
      NcclOption o;
      o.algorithm = algorithm_of(a);
      o.protocol = protocol_of(p);
      o.latency_s = latency * 1e-6;
      o.bandwidth_Bps = bandwidth * 1e9;
      o.predicted_s = o.latency_s + bytes / o.bandwidth_Bps;
      options.push_back(o);
    }
  }
  std::stable_sort(options.begin(), options.end(),
                   [](const NcclOption& x, const NcclOption& y) { return x.predicted_s < y.predicted_s; });
  return options;
}

double nccl_ring_step_latency_s(bool nvlink, Protocol protocol) {
  const int p = protocol == Protocol::kLL ? kLL : protocol == Protocol::kLL128 ? kLL128 : kSimple;
  return kHwLatency_us[nvlink ? kNvlink : kPci][kRing][p] * 1e-6;
}

double nccl_ring_base_latency_s(Protocol protocol) {
  const int p = protocol == Protocol::kLL ? kLL : protocol == Protocol::kLL128 ? kLL128 : kSimple;
  return kBaseLatency_us[kRing][p] * 1e-6;
}

std::string nccl_option_name(CollectiveAlgorithm algorithm, Protocol protocol) {
  const std::string proto = protocol == Protocol::kLL       ? "LL"
                            : protocol == Protocol::kLL128  ? "LL128"
                            : protocol == Protocol::kSimple ? "Simple"
                                                            : model::to_string(protocol);
  return model::to_string(algorithm) + "/" + proto;
}

}  // namespace tpsim::sim
