// HBM accesses of NCCL's FIFO-staged traffic: the factors from NCCL's per-step primitives, and their power draw.
#include <catch2/catch.hpp>
#include <vector>

#include "model/graph/program_builder.hpp"
#include "sim/cost/hbm_traffic.hpp"
#include "sim/engine/comm_plan.hpp"
#include "sim/engine/isolated_run.hpp"
#include "test_support.hpp"

using namespace tpsim;

namespace {

// One NCCL primitive of a ring rank (src/device/prims_simple.h): what it reads and writes.
struct Primitive {
  bool recv = false;  // reads its own FIFO
  bool send = false;  // writes the next rank's FIFO (a link chunk)
  bool input = false;
  bool output = false;
};

// HBM accesses per link byte of one rank running `steps` on chunks, with FIFO lines of `w` bytes per payload byte:
// every FIFO byte this rank writes into its peer is matched by one its predecessor writes into it, so the ring's
// FIFO writes are counted where they are sent.
double accesses_per_link_byte(const std::vector<Primitive>& steps, double w) {
  double accesses = 0, link_chunks = 0;
  for (const Primitive& p : steps) {
    accesses += (p.recv ? w : 0) + (p.send ? w : 0) + (p.input ? 1 : 0) + (p.output ? 1 : 0);
    link_chunks += p.send ? 1 : 0;
  }
  return accesses / link_chunks;
}

// The primitives of NCCL's out-of-place rings (src/device/all_gather.h, reduce_scatter.h, all_reduce.h).
std::vector<Primitive> ring_steps(model::CollectiveKind kind, int n) {
  const Primitive send{false, true, true, false}, copy_send{false, true, true, true};
  const Primitive recv_copy_send{true, true, false, true}, recv{true, false, false, true};
  const Primitive recv_reduce_send{true, true, true, false}, recv_reduce_copy{true, false, true, true};
  const Primitive recv_reduce_copy_send{true, true, true, true};
  std::vector<Primitive> steps;
  if (kind == model::CollectiveKind::kAllGather) {
    steps.push_back(copy_send);
    steps.insert(steps.end(), n - 2, recv_copy_send);
    steps.push_back(recv);
  } else if (kind == model::CollectiveKind::kReduceScatter) {
    steps.push_back(send);
    steps.insert(steps.end(), n - 2, recv_reduce_send);
    steps.push_back(recv_reduce_copy);
  } else {
    steps.push_back(send);
    steps.insert(steps.end(), n - 2, recv_reduce_send);
    steps.push_back(recv_reduce_copy_send);
    steps.insert(steps.end(), n - 2, recv_copy_send);
    steps.push_back(recv);
  }
  return steps;
}

}  // namespace

TEST_CASE("NCCL's ring HBM accesses per link byte are its primitives' reads and writes over the chunks it sends") {
  using model::CollectiveKind, model::Protocol;
  // FIFO bytes per payload byte: LL's 16-byte lines hold 8 data bytes, LL128's 128-byte lines 120.
  const std::vector<std::pair<Protocol, double>> protocols = {
      {Protocol::kSimple, 1.0}, {Protocol::kLL, 2.0}, {Protocol::kLL128, 128.0 / 120.0}};
  for (const CollectiveKind kind :
       {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter, CollectiveKind::kAllReduce}) {
    for (const auto& [protocol, w] : protocols) {
      for (const int n : {2, 4, 8, 72}) {
        INFO(model::to_string(kind) << " " << model::to_string(protocol) << " " << n << " ranks");
        const double expected = accesses_per_link_byte(ring_steps(kind, n), w);
        CHECK(sim::ring_hbm_accesses_per_link_byte(kind, protocol, n) == Approx(expected).epsilon(1e-12));
        CHECK(expected <= sim::kMaxHbmAccessesPerLinkByte);
      }
    }
  }
  // The Simple figures at 8 ranks: (3n - 1)/(n - 1) for all-gather, (3n - 2)/(n - 1) for all-reduce.
  CHECK(sim::ring_hbm_accesses_per_link_byte(CollectiveKind::kAllGather, Protocol::kSimple, 8) == Approx(23.0 / 7));
  CHECK(sim::ring_hbm_accesses_per_link_byte(CollectiveKind::kAllReduce, Protocol::kSimple, 8) == Approx(22.0 / 7));
}

TEST_CASE("a send/recv reads the input, writes and reads the receiver's FIFO and writes the output") {
  // Sender: one read; receiver: the FIFO written and read (w each), the output written.
  CHECK(sim::point_to_point_hbm_accesses_per_link_byte(model::Protocol::kSimple) == 4.0);
  CHECK(sim::point_to_point_hbm_accesses_per_link_byte(model::Protocol::kLL) == 1 + 2 * 2.0 + 1);
  CHECK(sim::point_to_point_hbm_accesses_per_link_byte(model::Protocol::kLL) <= sim::kMaxHbmAccessesPerLinkByte);
}

TEST_CASE("plans count NCCL's rings and send/recvs by their FIFO traffic and copy-engine steps as copies") {
  const sim::CostModel cost = test::h100_cost();
  const model::Op ring =
      test::collective_op(model::CollectiveKind::kAllGather, 512.0 * 1024 * 1024, model::CollectiveAlgorithm::kRing);
  const sim::CommPlan ring_plan = sim::plan_communication(ring, 8, cost);
  REQUIRE(ring_plan.protocol == model::Protocol::kSimple);
  CHECK(ring_plan.hbm_accesses_per_link_byte == Approx(23.0 / 7));
  model::Op pull;
  pull.kind = model::OpKind::kExchange;
  pull.send_offset = 1;
  pull.recv_offset = -1;
  pull.message_bytes = 1e6;
  pull.transport = model::Transport::kCopyEngine;
  CHECK(sim::plan_communication(pull, 8, cost).hbm_accesses_per_link_byte == sim::kCopyHbmAccessesPerLinkByte);
  pull.transport = model::Transport::kSm;
  CHECK(sim::plan_communication(pull, 8, cost).hbm_accesses_per_link_byte == 4.0);
}

namespace {

// PyTorch's overlapped matmul / all-gather benchmark (pytorch/pytorch#172714, as
// scenarios/published/ops-pytorch-172714-matmul-allgather.yaml writes it): an 8192^3 GEMM beside a 512 MiB
// all-gather over NCCL's ring, or beside 7 copy-engine steps of 64 MiB. When the GEMM and its partner are done.
double overlap_end_s(const sim::CostModel& cost, bool copy_engine) {
  model::LayerGraph graph(8);
  model::ProgramBuilder b(graph, 2.0);
  b.set_comm_stream(copy_engine ? model::Stream::kCopy : model::Stream::kComm);
  b.set_collective_algorithm(model::CollectiveAlgorithm::kNccl);
  if (copy_engine) {
    for (int step = 0; step < 7; ++step) {
      b.exchange("ce_ag" + std::to_string(step), 1, -1, 64.0 * 1024 * 1024, model::Transport::kCopyEngine, "", {});
    }
  } else {
    b.collective("nccl_ag", model::CollectiveKind::kAllGather, 512.0 * 1024 * 1024, "", {});
  }
  b.gemm("gemm", {8192, 8192, 8192}, {});
  return sim::simulate(graph, cost).makespan_s;
}

}  // namespace

TEST_CASE("beside a GEMM at the power limit NCCL's all-gather slows it by its FIFO traffic, copy engines do not") {
  const sim::CostModel with(test::gpu_preset("h100-sxm"), test::profile_preset("h100-sxm"));
  sim::GpuSpec no_extra_gpu = test::gpu_preset("h100-sxm");
  REQUIRE(no_extra_gpu.hbm_pJ_per_bit > 0);
  no_extra_gpu.hbm_pJ_per_bit = 0;  // the extra accesses draw nothing; the copy's energy per bit stays
  const sim::CostModel without(no_extra_gpu, test::profile_preset("h100-sxm"));
  REQUIRE(with.profile().power);
  CHECK(overlap_end_s(with, false) > overlap_end_s(without, false) * 1.001);
  CHECK(overlap_end_s(with, true) == overlap_end_s(without, true));
}
