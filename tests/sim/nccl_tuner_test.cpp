// NCCL's tuner as tpsim models it: the channel graphs of its topology search and the choices that public
// NCCL 2.27 runs report (RING/LL up to 1 MiB then NVLS on 8 H200s; ring below 5 H200s and 6 B200s).
#include <catch2/catch.hpp>

#include "input/gpu_reader.hpp"
#include "input/presets.hpp"
#include "input/yaml_reader.hpp"
#include "sim/cost/gpu_spec.hpp"
#include "sim/cost/nccl_tuner.hpp"

using namespace tpsim;
using model::CollectiveAlgorithm;
using model::CollectiveKind;
using model::Protocol;

namespace {

sim::GpuSpec preset_gpu(const std::string& name) {
  const model::YamlReader in("presets/gpus/" + name + ".yaml");
  return sim::read_gpu_spec(in, in.parse_text(std::string(*model::find_preset("gpus", name, "yaml"))));
}

sim::NcclSystem node_of(const std::string& gpu, int ranks) {
  const sim::GpuSpec spec = preset_gpu(gpu);
  return sim::nccl_system(spec, sim::nvswitch_fabric(spec), ranks);
}

sim::NcclOption choice(const sim::NcclSystem& s, CollectiveKind kind, double bytes) {
  const auto ranking = sim::nccl_ranking(s, kind, bytes);
  REQUIRE(!ranking.empty());
  return ranking.front();
}

const sim::NcclOption& option(const std::vector<sim::NcclOption>& options, CollectiveAlgorithm a, Protocol p) {
  for (const sim::NcclOption& o : options) {
    if (o.algorithm == a && o.protocol == p) return o;
  }
  FAIL("no such option");
  return options.front();
}

}  // namespace

TEST_CASE("an H100 node's ring search finds 6 channels of 60 GB/s and duplicates them into 12 of 30") {
  // 18 NVLink-4 links x 20.6 GB/s = 370.8: 6 x 60 = 360 fit; duplication halves the speed.
  const sim::NcclSystem s = node_of("h100-sxm", 8);
  CHECK(s.ring.channels == 12);
  CHECK(s.ring.bw_intra_GBps == 30);
  CHECK(s.tree.channels == 12);
  CHECK(s.tree.bw_intra_GBps == 30);
  // NVLS: a channel per GPU, (8 + 1) x speed <= 370.8 gives 40; the network side rises to 60.
  CHECK(s.nvls);
  CHECK(s.nvls_graph.channels == 8);
  CHECK(s.nvls_graph.bw_intra_GBps == 40);
  CHECK(s.nvls_graph.bw_inter_GBps == 60);
}

TEST_CASE("NCCL's ring all-reduce estimate on 8 H100s is its base latency plus 14 steps and the bus bandwidth") {
  const sim::NcclSystem s = node_of("h100-sxm", 8);
  const double bytes = 64e6;
  const auto options = sim::nccl_ranking(s, CollectiveKind::kAllReduce, bytes);
  const sim::NcclOption& simple = option(options, CollectiveAlgorithm::kRing, Protocol::kSimple);
  CHECK(simple.latency_s == Approx((8.4 + 14 * 3.4) * 1e-6));
  CHECK(simple.bandwidth_Bps == Approx(12 * 30 * 8.0 / 14 * 1e9));
  const sim::NcclOption& ll = option(options, CollectiveAlgorithm::kRing, Protocol::kLL);
  CHECK(ll.latency_s == Approx((6.6 + 14 * 0.6) * 1e-6));
  CHECK(ll.bandwidth_Bps == Approx(std::min(141.0, 360 * 0.5) * 8.0 / 14 * 1e9));
  const sim::NcclOption& nvls = option(options, CollectiveAlgorithm::kNvls, Protocol::kSimple);
  CHECK(nvls.latency_s == Approx(25e-6));
  CHECK(nvls.bandwidth_Bps == Approx(8 * 40 * 5.0 / 6 * 1e9));
  CHECK(nvls.predicted_s == Approx(25e-6 + bytes / (8 * 40 * 5.0 / 6 * 1e9)));
}

TEST_CASE("on 8 H200s NCCL runs ring LL up to 1 MiB and NVLS Simple from 2 MiB, as its logs report") {
  const sim::NcclSystem s = node_of("h200-sxm", 8);
  for (double bytes = 32 * 1024; bytes <= 1024 * 1024; bytes *= 2) {
    const sim::NcclOption c = choice(s, CollectiveKind::kAllReduce, bytes);
    INFO(bytes);
    CHECK(c.algorithm == CollectiveAlgorithm::kRing);
    CHECK(c.protocol == Protocol::kLL);
  }
  for (double bytes = 2 * 1024 * 1024; bytes <= 16.0 * 1024 * 1024 * 1024; bytes *= 2) {
    INFO(bytes);
    CHECK(choice(s, CollectiveKind::kAllReduce, bytes).algorithm == CollectiveAlgorithm::kNvls);
  }
}

TEST_CASE("NCCL picks the ring over NVLS below 5 H200s and below 6 B200s for an 8 GiB all-reduce") {
  const double bytes = 8.0 * 1024 * 1024 * 1024;
  for (int ranks = 4; ranks <= 8; ++ranks) {
    INFO(ranks);
    CHECK((choice(node_of("h200-sxm", ranks), CollectiveKind::kAllReduce, bytes).algorithm ==
           CollectiveAlgorithm::kNvls) == (ranks >= 5));
    CHECK((choice(node_of("b200", ranks), CollectiveKind::kAllReduce, bytes).algorithm == CollectiveAlgorithm::kNvls) ==
          (ranks >= 6));
  }
}

TEST_CASE("NCCL's all-gathers on 8 H100s run ring LL, then LL128, then Simple as the size grows") {
  const sim::NcclSystem s = node_of("h100-sxm", 8);
  CHECK(choice(s, CollectiveKind::kAllGather, 1 << 20).protocol == Protocol::kLL);
  CHECK(choice(s, CollectiveKind::kAllGather, 8 << 20).protocol == Protocol::kLL128);
  CHECK(choice(s, CollectiveKind::kAllGather, 512 << 20).protocol == Protocol::kSimple);
  for (double bytes : {1e6, 8e6, 512e6})
    CHECK(choice(s, CollectiveKind::kAllGather, bytes).algorithm == CollectiveAlgorithm::kRing);
}

TEST_CASE("an A100 node has no NVLS, and NCCL's constants there are Ampere's") {
  const sim::NcclSystem s = node_of("a100-sxm", 8);
  CHECK_FALSE(s.nvls);
  // 12 links x 20 GB/s = 240: 6 channels of 40, duplicated into 12 of 20.
  CHECK(s.ring.channels == 12);
  CHECK(s.ring.bw_intra_GBps == 20);
  const auto options = sim::nccl_ranking(s, CollectiveKind::kAllReduce, 1e9);
  const sim::NcclOption& ll = option(options, CollectiveAlgorithm::kRing, Protocol::kLL);
  CHECK(ll.bandwidth_Bps == Approx(std::min(87.7, 240 * 0.5) * 8.0 / 14 * 1e9));
}

TEST_CASE("a forced protocol leaves NCCL only that protocol's pairs") {
  const auto options = sim::nccl_ranking(node_of("h100-sxm", 8), CollectiveKind::kAllReduce, 1e6, Protocol::kSimple);
  REQUIRE(!options.empty());
  for (const sim::NcclOption& o : options) CHECK(o.protocol == Protocol::kSimple);
}

TEST_CASE("NCCL's tuner refuses a GPU without a compute capability, naming it") {
  sim::GpuSpec gpu = preset_gpu("h100-sxm");
  gpu.compute_capability = 0;
  CHECK_THROWS_WITH(sim::nccl_system(gpu, sim::nvswitch_fabric(gpu), 8), Catch::Contains("compute_capability"));
}
