// The SMs NCCL's kernels hold per algorithm and size, the compute share left, and the states they give.
#include <catch2/catch.hpp>

#include "sim/cost/sm_sharing.hpp"
#include "sim/engine/comm_plan.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::CollectiveAlgorithm;
using model::Protocol;

TEST_CASE("NCCL's kernels hold their algorithm's channels: NVLS 16, point-to-point 32, rings 24 from 768 KiB") {
  sim::CostProfile p;
  p.nccl_sms = 24;
  p.nccl_nvls_sms = 16;
  p.nccl_p2p_sms = 32;
  const double MiB = 1 << 20;
  CHECK(sim::nccl_kernel_sms(p, CollectiveAlgorithm::kNvls, Protocol::kSimple, 1.0, 8) == 16);
  CHECK(sim::nccl_kernel_sms(p, CollectiveAlgorithm::kPointToPoint, Protocol::kSimple, 1.0, 8) == 32);
  // Simple: 512 threads x 64 bytes = 32 KiB per channel before NCCL drops one.
  CHECK(sim::nccl_kernel_sms(p, CollectiveAlgorithm::kRing, Protocol::kSimple, 512 * MiB, 8) == 24);
  CHECK(sim::nccl_kernel_sms(p, CollectiveAlgorithm::kRing, Protocol::kSimple, 24 * 32768.0, 8) == 24);
  CHECK(sim::nccl_kernel_sms(p, CollectiveAlgorithm::kRing, Protocol::kSimple, 3 * 32768.0, 8) == 3);
  CHECK(sim::nccl_kernel_sms(p, CollectiveAlgorithm::kTree, Protocol::kSimple, 1000.0, 8) == 1);
  // LL: 512 threads x 8 bytes x the ranks; LL128: 640 x 8.
  CHECK(sim::nccl_kernel_sms(p, CollectiveAlgorithm::kRing, Protocol::kLL, 5 * 512 * 8 * 8.0, 8) == 5);
  CHECK(sim::nccl_kernel_sms(p, CollectiveAlgorithm::kRing, Protocol::kLL128, 7 * 640 * 8.0, 8) == 7);
}

TEST_CASE("a planned ring all-gather records the SMs its kernel holds, the profile's ring channels") {
  const sim::CostModel cost = test::h100_cost();
  model::Op ag;
  ag.kind = model::OpKind::kCollective;
  ag.collective = model::CollectiveKind::kAllGather;
  ag.algorithm = CollectiveAlgorithm::kRing;
  ag.tensor_bytes = 512.0 * (1 << 20);
  const sim::CommPlan ring = sim::plan_communication(ag, 8, cost);
  CHECK(ring.uses_sms);
  CHECK(ring.sms == cost.profile().nccl_sms);
}

TEST_CASE("compute keeps the SMs comm kernels leave, never under 5%") {
  CHECK(sim::compute_share_left(132, 0) == 1.0);
  CHECK(sim::compute_share_left(132, 33) == Approx(0.75));
  CHECK(sim::compute_share_left(132, 132) == Approx(0.05));
}

TEST_CASE("the compute states list every total of SMs up to seven comm kernels hold, capped at the GPU's") {
  const std::vector<int> totals = sim::sm_totals({24, 16}, 7, 132);
  CHECK(totals.front() == 0);
  CHECK(std::is_sorted(totals.begin(), totals.end()));
  CHECK(std::find(totals.begin(), totals.end(), 40) != totals.end());
  CHECK(std::find(totals.begin(), totals.end(), 128) != totals.end());  // 24 x 2 + 16 x 5
  CHECK(totals.back() == 132);
}
