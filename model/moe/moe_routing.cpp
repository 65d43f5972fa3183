// Expert shares (balanced or Zipf over a seeded shuffle) and the busiest expert-parallel GPU's load.
#include "model/moe/moe_routing.hpp"

#include "base/splitmix.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tpsim::model {
namespace {

// n choose r as a double (0 when r is out of range).
double choose(int64_t n, int64_t r) {
  if (r < 0 || r > n) return 0.0;
  double c = 1;
  for (int64_t i = 1; i <= r; ++i) c = c * static_cast<double>(n - r + i) / static_cast<double>(i);
  return c;
}

// The popularity rank of each expert in layer `layer`: a Fisher-Yates shuffle drawn from the seed and the
// layer alone (the same on every machine: no library distribution in between).
std::vector<int64_t> popularity_ranks(int64_t experts, uint64_t seed, int64_t layer) {
  std::vector<int64_t> ranks(static_cast<size_t>(experts));
  std::iota(ranks.begin(), ranks.end(), 0);
  const uint64_t stream = splitmix64(seed ^ splitmix64(static_cast<uint64_t>(layer) + 1));
  for (int64_t i = experts - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(splitmix64(stream + static_cast<uint64_t>(i)) % static_cast<uint64_t>(i + 1));
    std::swap(ranks[static_cast<size_t>(i)], ranks[static_cast<size_t>(j)]);
  }
  return ranks;
}

// The probability that a token's k experts, drawn uniformly among the `pool` experts of its groups, all miss
// `held` of them: C(pool - held, k) / C(pool, k).
double uniform_miss(int64_t k, int64_t pool, int64_t held) {
  double miss = 1;
  for (int64_t j = 0; j < k; ++j) {
    miss *= std::max(0.0, static_cast<double>(pool - held - j)) / static_cast<double>(pool - j);
  }
  return miss;
}

// Balanced routing under a group-limited router: the token's `group_limit` groups are drawn uniformly among the
// `groups`, its k experts uniformly among theirs. The miss probability of experts first .. first + held - 1 is the
// mean over the drawn groups of uniform_miss over the experts of the set they hold; a recursion over the groups the
// set touches counts the draws by how many of them it takes and how many of the set's experts those hold.
double group_limited_miss(const MoeSpec& moe, int64_t first, int64_t held) {
  const int64_t size = moe.experts / moe.groups, limit = moe.group_limit;
  std::vector<int64_t> touched;  // the set's experts in each group it touches
  for (int64_t e = first; e < first + held; ++e) {
    if (e == first || e % size == 0) touched.push_back(0);
    ++touched.back();
  }
  const auto width = static_cast<size_t>(held + 1);
  // ways[j][h]: draws of j touched groups holding h of the set's experts.
  std::vector<std::vector<double>> ways(static_cast<size_t>(limit + 1), std::vector<double>(width, 0.0));
  ways[0][0] = 1;
  for (const int64_t in_group : touched) {
    for (int64_t j = limit; j >= 1; --j) {
      for (int64_t h = held; h >= in_group; --h) ways[j][h] += ways[j - 1][h - in_group];
    }
  }
  const int64_t untouched = moe.groups - static_cast<int64_t>(touched.size());
  double total = 0, miss = 0;
  for (int64_t j = 0; j <= limit; ++j) {
    // The draw's other limit - j groups among the untouched ones.
    const double others = choose(untouched, limit - j);
    for (int64_t h = 0; h <= held; ++h) {
      const double draws = ways[j][h] * others;
      total += draws;
      miss += draws * uniform_miss(moe.experts_per_token, limit * size, h);
    }
  }
  return miss / total;
}

// The probability that a token's k experts all miss experts first .. first + held - 1 of total share `share`: for
// one expert 1 - k share (it is among the token's k with probability k share: 1 - k / E balanced); for a larger
// set, balanced, exactly C(E - held, k) / C(E, k) (k distinct experts of E uniformly), or group_limited_miss under
// a group-limited router; skewed, (1 - share)^k (the shares carry whatever the router did).
double miss_probability(const MoeSpec& moe, bool balanced, int64_t first, int64_t held, double share) {
  const int64_t k = moe.experts_per_token;
  if (held == 1) return 1.0 - std::min(1.0, share * static_cast<double>(k));
  if (!balanced) return std::pow(std::max(0.0, 1.0 - share), static_cast<double>(k));
  if (moe.group_limited()) return group_limited_miss(moe, first, held);
  return uniform_miss(k, moe.experts, held);
}

// Whether an expert of share `share` receives a copy from at least one of `tokens` tokens.
double active_probability(const MoeSpec& moe, double share, double tokens) {
  return 1.0 - std::pow(miss_probability(moe, false, 0, 1, share), tokens);
}

// DeepEP's per-token messages over the layer's shares (expert e on GPU e / local).
void deepep_messages(const MoeSpec& moe, const ExpertParallel& ep, const std::vector<double>& shares, int busiest,
                     double group_tokens, LayerRouting& r) {
  const int64_t local = moe.experts / ep.degree;
  const bool balanced = ep.routing == Routing::kBalanced;
  const auto held_share = [&](int64_t first, int64_t count) {
    double share = 0;
    for (int64_t e = first; e < first + count; ++e) share += shares[static_cast<size_t>(e)];
    return share;
  };
  r.busiest_received_tokens = group_tokens * (1.0 - miss_probability(moe, balanced, busiest * local, local,
                                                                     held_share(busiest * local, local)));
  const int node_gpus = ep.node_gpus > 0 ? std::min(ep.node_gpus, ep.degree) : ep.degree;
  const int nodes = (ep.degree + node_gpus - 1) / node_gpus;
  r.destination_nodes = 0;
  for (int n = 0; n < nodes; ++n) {
    const int64_t first = static_cast<int64_t>(n) * node_gpus * local;
    const int64_t count = std::min<int64_t>(static_cast<int64_t>(node_gpus) * local, moe.experts - first);
    r.destination_nodes += 1.0 - miss_probability(moe, balanced, first, count, held_share(first, count));
  }
}

}  // namespace

int64_t LayerRouting::busiest_groups() const {
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(busiest_active_experts * (1 - 1e-12))));
}

int64_t LayerRouting::busiest_rows() const {
  // Copies are whole; the shares' sums may land a rounding error above a whole number (1e-12 relative: far
  // above a double sum's rounding over a few thousand experts, far below one copy in 1e9).
  return static_cast<int64_t>(std::ceil(busiest_copies * (1 - 1e-12)));
}

std::vector<double> expert_shares(const MoeSpec& moe, const ExpertParallel& ep, int64_t layer) {
  const auto experts = static_cast<size_t>(moe.experts);
  std::vector<double> shares(experts, 1.0 / static_cast<double>(experts));
  if (ep.routing == Routing::kFromFile) return ep.layer_shares.at(static_cast<size_t>(layer));
  if (ep.routing == Routing::kBalanced || ep.zipf_s == 0) return shares;
  const std::vector<int64_t> rank = popularity_ranks(moe.experts, ep.seed, layer);
  double total = 0;
  for (size_t e = 0; e < experts; ++e) {
    shares[e] = std::pow(static_cast<double>(rank[e] + 1), -ep.zipf_s);
    total += shares[e];
  }
  for (double& share : shares) share /= total;
  return shares;
}

LayerRouting route_layer(const MoeSpec& moe, const ExpertParallel& ep, int64_t rank_tokens, int64_t layer) {
  LayerRouting r;
  r.group_copies = static_cast<double>(rank_tokens * moe.experts_per_token) * ep.degree;
  const int64_t local = moe.experts / ep.degree;
  const double group_tokens = static_cast<double>(rank_tokens) * ep.degree;
  if (ep.routing == Routing::kBalanced && !ep.drop) {
    r.busiest_copies = r.mean_copies = r.group_copies / ep.degree;
    r.busiest_active_experts =
        static_cast<double>(local) * active_probability(moe, 1.0 / static_cast<double>(moe.experts), group_tokens);
    if (ep.dispatcher == Dispatcher::kDeepEp) {
      deepep_messages(moe, ep, expert_shares(moe, ep, layer), 0, group_tokens, r);
    }
    return r;
  }
  const std::vector<double> shares = expert_shares(moe, ep, layer);
  int busiest = 0;
  const double capacity = ep.drop ? ep.capacity_factor * r.group_copies / static_cast<double>(moe.experts) : 0;
  double kept = 0;
  for (int rank = 0; rank < ep.degree; ++rank) {
    double copies = 0, active = 0;
    for (int64_t e = rank * local; e < (rank + 1) * local; ++e) {
      const double share = shares[static_cast<size_t>(e)];
      const double routed = share * r.group_copies;
      copies += ep.drop ? std::min(routed, capacity) : routed;
      active += active_probability(moe, share, group_tokens);
    }
    kept += copies;
    if (rank == 0 || copies > r.busiest_copies) {
      r.busiest_copies = copies;
      r.busiest_active_experts = active;
      busiest = rank;
    }
  }
  r.mean_copies = kept / ep.degree;
  r.dropped_copies = ep.drop ? std::max(0.0, r.group_copies - kept) : 0.0;
  if (ep.dispatcher == Dispatcher::kDeepEp) deepep_messages(moe, ep, shares, busiest, group_tokens, r);
  return r;
}

RoutingSummary summarize_routing(const MoeSpec& moe, const ExpertParallel& ep, int64_t rank_tokens, int64_t layers) {
  RoutingSummary summary;
  double imbalance = 0, dropped = 0, routed = 0;
  for (int64_t layer = 0; layer < layers; ++layer) {
    const LayerRouting r = route_layer(moe, ep, rank_tokens, layer);
    imbalance += r.imbalance();
    if (layer == 0 || r.imbalance() > summary.worst_imbalance) {
      summary.worst_imbalance = r.imbalance();
      summary.worst_layer = layer;
    }
    dropped += r.dropped_copies;
    routed += r.group_copies;
  }
  if (layers > 0) summary.mean_imbalance = imbalance / static_cast<double>(layers);
  if (routed > 0) summary.dropped_fraction = dropped / routed;
  return summary;
}

}  // namespace tpsim::model
