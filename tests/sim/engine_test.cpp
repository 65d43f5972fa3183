// The engine against closed-form timings: ring collectives, link sharing, SM and copy-engine contention.
#include <catch2/catch.hpp>

#include "model/graph/program_builder.hpp"
#include "model/parallel/async_tp.hpp"
#include "sim/cost/sm_sharing.hpp"
#include "sim/engine/isolated_run.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::Transport;

namespace {

// A profile with round numbers so expected times are easy to derive.
sim::CostModel simple_cost() {
  sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  sim::CostProfile profile = test::fixed_clock(test::profile_preset("h100-sxm"));
  profile.nccl = {5e-6, 0.8};
  profile.copy_engine = {5e-6, 0.8};
  profile.copy_engine_all_ranks_efficiency.reset();  // one copy-engine rate for every exchange
  profile.nccl_sms = profile.nccl_p2p_sms = 33;      // a quarter of 132 SMs, rings and send/recv alike
  profile.gemm.shared_tail_tiles = 0;                // no tail beside comm kernels (its own test below)
  profile.nccl_call_latency_s = 0;                   // steps alone (its own test below)
  profile.power->transfer_pJ_per_bit = 0;            // transfers draw no power (tests/sim/transfer_power_test.cpp)
  return sim::CostModel(gpu, profile);
}

// The default H100 profile with transfers drawing no power: the SM share alone slows a GEMM beside NCCL
// (the draw's own tests: tests/sim/transfer_power_test.cpp).
sim::CostModel h100_without_transfer_draw() {
  sim::CostProfile profile = test::fixed_clock(test::profile_preset("h100-sxm"));
  profile.power->transfer_pJ_per_bit = 0;
  return sim::CostModel(test::gpu_preset("h100-sxm"), profile);
}

// An op-list scenario on 8 H100s, its ops to follow.
const std::string kOpListHead = R"(hardware: {gpu: h100-sxm}
parallelism: {tp: 8}
workload:
  phase: ops
  cuda_graphs: true
  ops:
)";

// An op-list scenario's rank program over 8 GPUs, and its timeline.
std::pair<model::LayerGraph, sim::Timeline> run_op_list(const std::string& scenario, const sim::CostModel& cost) {
  const model::Scenario s = model::parse_scenario(scenario, "ops.yaml");
  model::LayerGraph graph =
      model::build_op_list_graph(s.workload.ops, 8, model::Dtype::kBf16, model::CollectiveAlgorithm::kAuto);
  sim::Timeline timeline = sim::simulate(graph, cost);
  return {std::move(graph), std::move(timeline)};
}

}  // namespace

TEST_CASE("a ring all-gather on an idle node takes (n-1)(alpha + bytes/(n B))") {
  const sim::CostModel cost = simple_cost();
  for (int n : {2, 4, 8}) {
    model::LayerGraph graph(n);
    model::ProgramBuilder b(graph, 2.0);
    const double bytes = 256.0 * 1024 * 1024;
    b.collective("ag", model::CollectiveKind::kAllGather, bytes, "", {});
    const sim::Timeline timeline = sim::simulate(graph, cost);
    const double link = cost.gpu().nvlink_Bps * cost.profile().nccl.link_efficiency;
    const double expected = (n - 1) * (cost.profile().nccl.step_latency_s + bytes / (n * link));
    INFO("n = " << n);
    CHECK(timeline.makespan_s == Approx(expected).epsilon(1e-9));
  }
}

TEST_CASE(
    "an NCCL call waits its call latency before its first step, holding its SMs, and a copy-engine step does not") {
  sim::CostProfile profile = simple_cost().profile();
  profile.nccl_call_latency_s = 1e-3;
  const sim::CostModel cost(test::gpu_preset("h100-sxm"), profile);
  const int n = 8;
  const double bytes = 64.0 * 1024 * 1024;
  const double link = cost.gpu().nvlink_Bps * 0.8;
  {
    model::LayerGraph graph(n);
    model::ProgramBuilder b(graph, 2.0);
    b.collective("ag", model::CollectiveKind::kAllGather, bytes, "", {});
    CHECK(sim::simulate(graph, cost).makespan_s == Approx(1e-3 + (n - 1) * (5e-6 + bytes / (n * link))).epsilon(1e-9));
  }
  {
    model::LayerGraph graph(n);
    model::ProgramBuilder b(graph, 2.0);
    b.exchange("ce", 1, -1, bytes, Transport::kCopyEngine, "", {});
    CHECK(sim::simulate(graph, cost).makespan_s == Approx(5e-6 + bytes / link).epsilon(1e-9));
  }
  // A GEMM beside an NCCL call of a few bytes runs on the SMs its one channel leaves during its call latency (NCCL
  // drops channels below 32 KiB each for Simple; a Simple ring, costed by the nccl regime set above: on auto, so
  // small a gather would run as a multimem kernel, which makes no NCCL call, or in the profile's small-message
  // regime).
  model::LayerGraph graph(n);
  model::ProgramBuilder b(graph, 2.0);
  b.set_collective_algorithm(model::CollectiveAlgorithm::kRing);
  b.set_collective_protocol(model::Protocol::kSimple);
  const model::OpId gemm = b.gemm("g", {16384, 8192, 8192}, {});
  b.collective("ag", model::CollectiveKind::kAllGather, 64, "", {});
  const sim::Timeline timeline = sim::simulate(graph, cost);
  const double gemm_s = cost.kernel_seconds(graph.op(gemm));
  REQUIRE(gemm_s > 2e-3);
  const double share = 1.0 - 1.0 / cost.gpu().sm_count;
  const double comm_end = test::end_of(timeline, 1, 0);
  CHECK(comm_end == Approx(1e-3 + (n - 1) * (5e-6 + 8.0 / link)).epsilon(1e-9));
  CHECK(test::end_of(timeline, gemm, 0) == Approx(comm_end + (gemm_s - share * comm_end)).epsilon(1e-9));
}

TEST_CASE("a ring all-reduce takes twice the steps of an all-gather") {
  const sim::CostModel cost = simple_cost();
  const int n = 8;
  model::LayerGraph graph(n);
  model::ProgramBuilder b(graph, 2.0);
  const double bytes = 64.0 * 1024 * 1024;
  b.set_collective_algorithm(model::CollectiveAlgorithm::kRing);
  b.collective("ar", model::CollectiveKind::kAllReduce, bytes, "", {});
  const double link = cost.gpu().nvlink_Bps * cost.profile().nccl.link_efficiency;
  const double expected = 2 * (n - 1) * (cost.profile().nccl.step_latency_s + bytes / (n * link));
  CHECK(sim::simulate(graph, cost).makespan_s == Approx(expected).epsilon(1e-9));
}

TEST_CASE("concurrent flows out of one GPU share its NVLink port") {
  const sim::CostModel cost = simple_cost();
  model::LayerGraph graph(4);
  model::ProgramBuilder b(graph, 2.0);
  const double bytes = 100e6;
  b.exchange("a", 1, -1, bytes, Transport::kSm, "", {});          // comm stream
  b.exchange("b", 2, -2, bytes, Transport::kCopyEngine, "", {});  // copy stream, at the same time
  const double link = cost.gpu().nvlink_Bps * 0.8;
  const double expected = 5e-6 + 2 * bytes / link;  // each flow gets half of every port
  CHECK(sim::simulate(graph, cost).makespan_s == Approx(expected).epsilon(1e-9));
}

TEST_CASE("an SM comm kernel slows a concurrent GEMM by its SM share, and copy-engine transfers take no SMs") {
  const sim::CostModel cost = simple_cost();
  const model::GemmShape shape{8192, 8192, 8192};
  const double gemm_s = cost.gemm_seconds(shape, 0);
  const double bytes = 200e6;
  const double comm_s = 5e-6 + bytes / (cost.gpu().nvlink_Bps * 0.8);
  REQUIRE(gemm_s > comm_s);
  for (Transport transport : {Transport::kSm, Transport::kCopyEngine}) {
    model::LayerGraph graph(2);
    model::ProgramBuilder b(graph, 0.0);  // zero element bytes: the GEMM is compute-bound
    const model::OpId gemm = b.gemm("gemm", shape, {});
    b.exchange("xfer", 1, -1, bytes, transport, "", {});
    const sim::Timeline timeline = sim::simulate(graph, cost);
    // While the comm kernel runs the GEMM gets 3/4 of the SMs; afterwards all of them.
    const double expected = transport == Transport::kSm ? comm_s + (gemm_s - 0.75 * comm_s) : gemm_s;
    INFO(model::to_string(transport));
    CHECK(test::end_of(timeline, gemm, 0) == Approx(expected).epsilon(1e-9));
  }
}

TEST_CASE("memory-bound kernels share HBM with NVLink traffic and keep their SMs") {
  const sim::CostModel cost = simple_cost();
  model::LayerGraph graph(2);
  model::ProgramBuilder b(graph, 2.0);
  const double bytes = 4e9;
  const model::OpId norm = b.memory("norm", bytes, 0, 0, "", {});
  const double message = 400e6;
  b.exchange("xfer", 1, -1, message, Transport::kSm, "", {});  // an SM comm kernel: no effect on the norm's speed
  const double hbm = sim::kHbmLinkBps(cost);
  const double nvlink_wire = cost.gpu().nvlink_Bps;  // each direction, payload / 0.8 on the wire
  const double overhead = cost.profile().memory.overhead_s;
  const double xfer_start = 5e-6, xfer_end = 5e-6 + message / 0.8 / nvlink_wire;
  // The norm's traffic runs at the whole HBM link, then at what the exchange's two flows (one out,
  // one in, both through this GPU's HBM) leave, then at the whole link again.
  double left = cost.kernel_cost(graph.op(norm)).memory_s * hbm;
  left -= (xfer_start - overhead) * hbm;
  left -= (xfer_end - xfer_start) * (hbm - 2 * nvlink_wire);
  REQUIRE(left > 0);
  const double expected = xfer_end + left / hbm;
  CHECK(test::end_of(sim::simulate(graph, cost), norm, 1) == Approx(expected).epsilon(1e-9));
}

TEST_CASE("copy-engine traffic takes no SMs from a compute-bound GEMM (and, drawing no power, no clock)") {
  const sim::CostModel cost = simple_cost();
  model::LayerGraph graph(2);
  model::ProgramBuilder b(graph, 2.0);
  const model::GemmShape shape{8192, 8192, 8192};
  const model::OpId gemm = b.gemm("gemm", shape, {});
  REQUIRE_FALSE(cost.kernel_cost(graph.op(gemm)).memory_bound());
  b.exchange("xfer", 1, -1, 400e6, Transport::kCopyEngine, "", {});
  CHECK(test::end_of(sim::simulate(graph, cost), gemm, 0) == Approx(cost.kernel_seconds(graph.op(gemm))).epsilon(1e-9));
}

TEST_CASE("a chunked all-gather + GEMM pipelines: each piece waits only for its own shard") {
  const sim::CostModel cost = simple_cost();
  const int n = 4;
  for (int64_t k : {1024, 16384}) {  // small K: transfers dominate; large K: GEMMs dominate
    model::LayerContext ctx;
    ctx.tokens = 4096;
    ctx.local_tokens = ctx.tokens / n;
    ctx.variant = test::variant(model::TpMode::kAsync, n, Transport::kCopyEngine);
    model::LayerGraph graph(n);
    model::ProgramBuilder b(graph, 2.0);
    const model::GemmShape full{ctx.tokens, 4096, k};
    const auto pieces = model::async_gather_gemm(b, ctx, "ag", full, std::nullopt, std::nullopt);
    const sim::Timeline timeline = sim::simulate(graph, cost);
    const model::Op& piece = graph.op(pieces.front());
    const double g = cost.kernel_seconds(piece);
    const double s = 5e-6 + ctx.local_tokens * k * 2.0 / (cost.gpu().nvlink_Bps * 0.8);
    // Piece 0 uses the local shard; piece j needs ring step j, done at j*s.
    double end = 0;
    for (int j = 0; j < n; ++j) end = std::max(end, j * s) + g;
    INFO("K = " << k << ", gemm piece " << g << " s, step " << s << " s");
    CHECK(timeline.makespan_s == Approx(end).epsilon(1e-9));
  }
}

TEST_CASE("an op list runs a GEMM slowed by an overlapped NCCL all-gather, not by copy-engine steps") {
  const sim::CostModel cost = h100_without_transfer_draw();
  const auto [graph, timeline] =
      run_op_list(kOpListHead +
                      "    - {name: g, kind: gemm, m: 8192, n: 8192, k: 8192}\n"
                      "    - {name: ag, kind: collective, collective: allgather, bytes: 256MiB, algorithm: ring}\n",
                  cost);
  const double gemm_s = cost.kernel_seconds(graph.op(0));
  const double ag_s = test::end_of(timeline, 1, 0);
  REQUIRE(ag_s < gemm_s);
  const double share = 1.0 - static_cast<double>(cost.profile().nccl_sms) / cost.gpu().sm_count;
  // While the all-gather's kernel runs the GEMM gets `share` of the SMs, and it ends its tail later.
  const double tail_s = sim::shared_tail_seconds(cost, graph.op(0), cost.kernel_cost(graph.op(0)));
  CHECK(tail_s > 0);
  CHECK(test::end_of(timeline, 0, 0) == Approx(ag_s + (gemm_s - share * ag_s) + tail_s).epsilon(1e-9));
}

TEST_CASE("collectives on two comm streams run at once, share the links and together take twice the SMs") {
  const std::string text =
      kOpListHead +
      "    - {name: g, kind: gemm, m: 16384, n: 8192, k: 8192}\n"
      "    - {name: a, kind: collective, collective: allgather, bytes: 256MiB, algorithm: ring}\n"
      "    - {name: b, kind: collective, collective: allgather, bytes: 256MiB, algorithm: ring, stream: comm2}\n";
  const sim::CostModel cost = h100_without_transfer_draw();
  const auto run = [&](const std::string& scenario) { return run_op_list(scenario, cost); };
  const auto [graph, both] = run(text);
  CHECK(graph.op(2).stream == model::Stream(3));
  const double gemm_s = cost.kernel_seconds(graph.op(0));
  // One all-gather alone, beside nothing: the same op list without the GEMM and the second one.
  const auto [alone_graph, alone] =
      run(kOpListHead + "    - {name: a, kind: collective, collective: allgather, bytes: 256MiB, algorithm: ring}\n");
  const double one_s = test::end_of(alone, 0, 0);
  const double a_s = test::end_of(both, 1, 0), b_s = test::end_of(both, 2, 0);
  CHECK(a_s == Approx(b_s).epsilon(1e-9));  // symmetric: they start and end together
  // Every step's two messages (one per ring, same direction) share each NVLink port; the latencies overlap.
  const sim::TransportParams& nccl = cost.profile().nccl;
  const double block_s = 256.0 * (1 << 20) / 8 / (cost.gpu().nvlink_Bps * nccl.link_efficiency);
  const double call_s = cost.profile().nccl_call_latency_s;
  CHECK(one_s == Approx(call_s + 7 * (nccl.step_latency_s + block_s)).epsilon(1e-6));
  CHECK(a_s == Approx(call_s + 7 * (nccl.step_latency_s + 2 * block_s)).epsilon(1e-6));
  // While both kernels run the GEMM keeps 1 - 2 x nccl.sms / SMs of the GPU, then all of it.
  REQUIRE(a_s < gemm_s);
  const double share = 1.0 - 2.0 * cost.profile().nccl_sms / cost.gpu().sm_count;
  const double tail_s = sim::shared_tail_seconds(cost, graph.op(0), cost.kernel_cost(graph.op(0)));
  CHECK(test::end_of(both, 0, 0) == Approx(a_s + (gemm_s - share * a_s) + tail_s).epsilon(1e-9));
  // On one comm stream they run one after the other.
  std::string serial = text;
  serial.replace(serial.find(", stream: comm2"), std::string(", stream: comm2").size(), "");
  const auto [serial_graph, in_order] = run(serial);
  CHECK(test::end_of(in_order, 2, 0) == Approx(2 * test::end_of(in_order, 1, 0)).epsilon(1e-6));
}

TEST_CASE("eager launches pay the host's launch time per op and its wait time per dependency on another stream") {
  // Three tiny ops: a memory kernel, an all-reduce after it (comm stream: one cross-stream wait), a
  // memory kernel after the all-reduce (compute stream: another). Host-bound: ops end near their launch.
  model::LayerGraph graph(2);
  model::ProgramBuilder b(graph, 2.0);
  const model::OpId first = b.memory("first", 64, 64, 0, "", {});
  const model::OpId reduce = b.collective("reduce", model::CollectiveKind::kAllReduce, 64, "", {first});
  const model::OpId last = b.memory("last", 64, 64, 0, "", {reduce});
  const sim::CostModel cost = simple_cost();
  const double launch = 20e-6, wait = 7e-6;  // far above the ops' own times
  const sim::Timeline eager = sim::simulate(graph, cost, sim::launch_costs(launch, wait));
  const sim::Timeline no_waits = sim::simulate(graph, cost, sim::launch_costs(launch));
  const auto start_of = [](const sim::Timeline& t, model::OpId op) {
    for (const auto& span : t.spans) {
      if (span.op == op && span.rank == 0) return span.start_s;
    }
    return -1.0;
  };
  CHECK(start_of(eager, first) == Approx(launch));
  CHECK(start_of(eager, reduce) == Approx(2 * launch + wait));
  CHECK(start_of(eager, last) == Approx(3 * launch + 2 * wait));
  CHECK(start_of(no_waits, last) == Approx(3 * launch));
  // A CUDA graph replays without either.
  sim::CostProfile profile = cost.profile();
  profile.host_launch_s = launch;
  profile.stream_wait_s = wait;
  const sim::EngineOptions graphs = sim::launch_options(profile, true);
  CHECK(graphs.host_launch_s == 0);
  CHECK(graphs.stream_wait_s == 0);
  CHECK(sim::launch_options(profile, false).stream_wait_s == wait);
}

TEST_CASE("an NCCL call costs the framework's host time more to launch, a custom kernel and a CUDA graph nothing") {
  // A tiny memory kernel, then an all-reduce after it (one cross-stream wait): host-bound, as in the test above.
  const auto reduce_start = [](model::CollectiveAlgorithm algorithm, const sim::EngineOptions& options) {
    model::LayerGraph graph(2);
    model::ProgramBuilder b(graph, 2.0);
    b.set_collective_algorithm(algorithm);
    const model::OpId first = b.memory("first", 64, 64, 0, "", {});
    const model::OpId reduce = b.collective("reduce", model::CollectiveKind::kAllReduce, 64, "", {first});
    const sim::Timeline t = sim::simulate(graph, simple_cost(), options);
    for (const auto& span : t.spans) {
      if (span.op == reduce && span.rank == 0) return span.start_s;
    }
    return -1.0;
  };
  sim::CostProfile profile = simple_cost().profile();
  profile.host_launch_s = 20e-6;
  profile.stream_wait_s = 7e-6;
  profile.collective_host_s = 15e-6;
  const sim::EngineOptions eager = sim::launch_options(profile, false);
  CHECK(eager.collective_host_s == profile.collective_host_s);
  // Launched after the kernel's launch, its own, its wait and the framework's time.
  CHECK(reduce_start(model::CollectiveAlgorithm::kRing, eager) == Approx(2 * 20e-6 + 7e-6 + 15e-6));
  CHECK(reduce_start(model::CollectiveAlgorithm::kNvls, eager) == Approx(2 * 20e-6 + 7e-6 + 15e-6));
  // A custom one-shot kernel is no NCCL call.
  CHECK(reduce_start(model::CollectiveAlgorithm::kDirect, eager) == Approx(2 * 20e-6 + 7e-6));
  CHECK(sim::launch_options(profile, true).collective_host_s == 0);
}

TEST_CASE("a GPU-side wait delays each op that waits for another stream's op on its GPU, graphs or not") {
  // first (compute) -> reduce (comm) -> last (compute): two cross-stream dependencies on the GPU.
  model::LayerGraph graph(2);
  model::ProgramBuilder b(graph, 2.0);
  const model::OpId first = b.memory("first", 1 << 20, 1 << 20, 0, "", {});
  const model::OpId reduce = b.collective("reduce", model::CollectiveKind::kAllReduce, 1 << 20, "", {first});
  const model::OpId last = b.memory("last", 1 << 20, 1 << 20, 0, "", {reduce});
  const model::OpId after = b.memory("after", 1 << 20, 1 << 20, 0, "", {last});  // same stream: no wait
  const sim::CostModel cost = simple_cost();
  const double gpu_wait = 9e-6;
  const sim::Timeline plain = sim::simulate(graph, cost);
  const sim::Timeline waited = sim::simulate(graph, cost, sim::launch_costs(0, 0, gpu_wait));
  const auto span_of = [](const sim::Timeline& t, model::OpId op) {
    for (const auto& span : t.spans) {
      if (span.op == op && span.rank == 0) return std::make_pair(span.start_s, span.end_s);
    }
    return std::make_pair(-1.0, -1.0);
  };
  CHECK(span_of(waited, first).first == 0);
  CHECK(span_of(waited, reduce).first == Approx(span_of(waited, first).second + gpu_wait));
  CHECK(span_of(waited, last).first == Approx(span_of(waited, reduce).second + gpu_wait));
  CHECK(span_of(waited, after).first == Approx(span_of(waited, last).second));
  CHECK(waited.makespan_s == Approx(plain.makespan_s + 2 * gpu_wait));
  // The profile's value is charged in eager mode and under CUDA graphs alike.
  sim::CostProfile profile = cost.profile();
  profile.gpu_wait_s = gpu_wait;
  CHECK(sim::launch_options(profile, true).gpu_wait_s == gpu_wait);
  CHECK(sim::launch_options(profile, false).gpu_wait_s == gpu_wait);
}

TEST_CASE("a GEMM that shared its SMs with a comm kernel ends its tail of tile times later, alone it pays none") {
  sim::CostProfile profile = test::fixed_clock(test::profile_preset("h100-sxm"));
  profile.power->transfer_pJ_per_bit = 0;
  profile.gemm.shared_tail_tiles = 1.5;
  const sim::CostModel cost(test::gpu_preset("h100-sxm"), profile);
  const std::string gemm = "    - {name: g, kind: gemm, m: 8192, n: 8192, k: 8192}\n";
  const auto [alone_graph, alone] = run_op_list(kOpListHead + gemm, cost);
  const double gemm_s = cost.kernel_seconds(alone_graph.op(0));
  CHECK(test::end_of(alone, 0, 0) == Approx(gemm_s).epsilon(1e-9));
  const auto [graph, beside] = run_op_list(
      kOpListHead + gemm + "    - {name: ag, kind: collective, collective: allgather, bytes: 64MiB, algorithm: ring}\n",
      cost);
  // 2048 tiles of 128 x 256 on 132 SMs: 16 waves; the tail is 1.5 of them.
  const sim::KernelCost k = cost.kernel_cost(graph.op(0));
  REQUIRE(cost.gemm_tiling(graph.op(0).gemm).waves == 16);
  const double ag_s = test::end_of(beside, 1, 0);
  const double share = 1.0 - 24.0 / 132;  // a ring all-gather of 64 MiB on all 24 channels
  CHECK(test::end_of(beside, 0, 0) == Approx(ag_s + (gemm_s - share * ag_s) + 1.5 * k.compute_s / 16).epsilon(1e-9));
}

TEST_CASE("a GEMM whose tiles all fit on the SMs a comm kernel leaves pays no tail, only the share of SMs left") {
  sim::CostProfile profile = test::fixed_clock(test::profile_preset("h100-sxm"));
  profile.power->transfer_pJ_per_bit = 0;
  profile.gemm.shared_tail_tiles = 1.5;
  const sim::CostModel cost(test::gpu_preset("h100-sxm"), profile);
  const auto [graph, beside] =
      run_op_list(kOpListHead +
                      "    - {name: g, kind: gemm, m: 1024, n: 2048, k: 1024}\n"
                      "    - {name: ag, kind: collective, collective: allgather, bytes: 64MiB, algorithm: ring}\n",
                  cost);
  // 8 x 8 = 64 tiles of 128 x 256, K too short to split: one wave on the 132 - 24 SMs the ring leaves.
  const sim::GemmTiling t = cost.gemm_tiling(graph.op(0).gemm);
  REQUIRE(t.tiles * t.splits == 64);
  const double gemm_s = cost.kernel_seconds(graph.op(0));
  REQUIRE(test::end_of(beside, 1, 0) > gemm_s * 2);  // the all-gather outlasts it
  CHECK(test::end_of(beside, 0, 0) == Approx(gemm_s / (1.0 - 24.0 / 132)).epsilon(1e-9));
}
