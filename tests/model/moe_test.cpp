// MoE layers' graphs under expert parallelism: the all-to-alls' bytes and time, the grouped expert GEMMs, the
// backward and recomputation, DeepEP's kernels, two-batch overlap and expert TP.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "model/graph/graph_builder.hpp"
#include "model/memory/parameter_count.hpp"
#include "model/scenario.hpp"
#include "moe_support.hpp"
#include "sim/cost/fabric.hpp"
#include "sim/engine/data_group.hpp"
#include "sim/run/scenario_run.hpp"
#include "test_support.hpp"

using namespace tpsim;
using namespace tpsim::test::moe;
using model::OpKind;
using model::OpStage;
using test::op_named;

TEST_CASE(
    "the all-to-all of balanced routing moves tokens x experts_per_token x hidden x (ep-1)/ep bytes per rank "
    "each way") {
  const model::ArchSpec arch = qwen3_moe();
  const auto w = with_experts(test::forward_workload(2, 4096, 2), kEp);
  const model::LayerGraph g = model::build_layer_graph(arch, w, kTp, test::variant(model::TpMode::kSp));
  const double rank_tokens = 2.0 * 4096 / kTp;  // sequence parallelism: each rank routes its own rows
  const double copies_bytes = rank_tokens * arch.moe.experts_per_token * static_cast<double>(arch.hidden) * 2.0;
  for (const char* name : {"L1.moe.dispatch", "L1.moe.combine"}) {
    INFO(name);
    const model::Op& a2a = op_named(g, name);
    CHECK(a2a.collective == model::CollectiveKind::kAllToAll);
    CHECK(a2a.group == model::CommGroup::kExpert);
    CHECK(a2a.group_size == kEp);
    CHECK(model::wire_bytes_per_rank(a2a) == Approx(copies_bytes * (kEp - 1) / kEp).epsilon(1e-12));
  }
}

TEST_CASE("grouped-GEMM FLOPs equal the sum over the local experts of the tokens they receive") {
  const model::ArchSpec arch = qwen3_moe();
  const auto w = with_experts(test::forward_workload(1, 2048, 1), kEp);
  const model::LayerGraph g = model::build_layer_graph(arch, w, 1, test::variant(model::TpMode::kSp));
  // Balanced: each of the 16 local experts receives 1/128 of the group's 8 x 2048 x 8 copies.
  const int64_t local = arch.moe.experts / kEp;
  const double per_expert = 8.0 * 2048 * arch.moe.experts_per_token / arch.moe.experts;
  double received = 0;
  for (int64_t e = 0; e < local; ++e) received += per_expert;
  const model::Op& gate_up = op_named(g, "L0.moe.experts.gate_up_proj");
  CHECK(gate_up.gemm.groups == local);
  CHECK(model::gemm_flops(gate_up.gemm) == Approx(2.0 * received * 2 * arch.moe.expert_ffn * arch.hidden));
  const model::Op& down = op_named(g, "L0.moe.experts.down_proj");
  CHECK(model::gemm_flops(down.gemm) == Approx(2.0 * received * arch.hidden * arch.moe.expert_ffn));
  // Every expert's weights are read: the local experts' [hidden, 2 x ffn] each.
  CHECK(gate_up.bytes_read == Approx(2.0 * (received * arch.hidden + local * arch.hidden * 2 * arch.moe.expert_ffn)));
}

TEST_CASE(
    "an MoE training step's backward does twice its forward's expert GEMM FLOPs, and sends the copies back "
    "twice") {
  const model::ArchSpec arch = qwen3_moe();
  const auto w = with_experts(test::train_workload(1, 2048, 2), kEp);
  const model::LayerGraph g = model::build_layer_graph(arch, w, kTp, test::variant(model::TpMode::kSp));
  double forward = 0, backward = 0;
  int forward_a2a = 0, backward_a2a = 0;
  for (const model::Op& op : g.ops()) {
    if (op.layer != 1 || op.module != 3) continue;
    if (op.kind == OpKind::kGemm) (op.stage == OpStage::kForward ? forward : backward) += model::gemm_flops(op.gemm);
    if (op.kind == OpKind::kCollective && op.collective == model::CollectiveKind::kAllToAll) {
      ++(op.stage == OpStage::kForward ? forward_a2a : backward_a2a);
    }
  }
  CHECK(forward > 0);
  CHECK(backward == Approx(2.0 * forward));
  CHECK(forward_a2a == 2);
  CHECK(backward_a2a == 2);
}

TEST_CASE(
    "simulated, an all-to-all takes NCCL's call latency, one step and the busiest GPU's bytes through its "
    "NVLink port") {
  const model::ArchSpec arch = qwen3_moe();
  const sim::CostModel cost = test::h100_cost();
  const auto dispatch_seconds = [&](const model::Workload& w) {
    const model::LayerGraph g = model::build_layer_graph(arch, w, 1, test::variant(model::TpMode::kSp));
    const model::Op& op = op_named(g, "L0.moe.dispatch");
    const sim::Timeline timeline = sim::simulate(g, cost);
    for (const sim::OpSpan& span : timeline.spans) {
      if (g.op(span.op).name == op.name && span.rank == 0) return std::pair{span.end_s - span.start_s, op.tensor_bytes};
    }
    FAIL("no span of the dispatch");
    return std::pair{0.0, 0.0};
  };
  const sim::TransportParams& nccl = cost.profile().nccl;
  for (const model::Workload& w : {with_experts(test::forward_workload(1, 4096, 1), kEp),
                                   with_experts(test::forward_workload(1, 4096, 1), kEp, zipf(1.0))}) {
    const auto [seconds, tensor_bytes] = dispatch_seconds(w);
    const double wire = tensor_bytes * (kEp - 1) / kEp;  // 1/ep of the busiest GPU's copies to each other member
    INFO("tensor bytes " << tensor_bytes);
    CHECK(seconds == Approx(cost.profile().nccl_call_latency_s + nccl.step_latency_s +
                            wire / (cost.port_Bps() * nccl.link_efficiency))
                         .epsilon(1e-6));  // SimGrid settles a flow's end to about 1e-7 of its time
  }
}

TEST_CASE("selective recomputation re-runs an MoE layer's all-to-alls unless the save list keeps all_to_all") {
  const model::ArchSpec arch = qwen3_moe();
  const auto recomputed_all_to_alls = [&](bool keep) {
    model::Workload w = with_experts(test::train_workload(1, 2048, 2, model::Recompute::kSelective), kEp);
    w.save.all_to_all = keep;
    const model::LayerGraph g = model::build_layer_graph(arch, w, kTp, test::variant(model::TpMode::kSp));
    int count = 0;
    for (const model::Op& op : g.ops()) {
      count += op.stage == OpStage::kRecompute && op.kind == OpKind::kCollective &&
               op.collective == model::CollectiveKind::kAllToAll;
    }
    return count;
  };
  // The gate/up weight gradient reads the dispatch's output, the un-permutation's backward the combine's.
  CHECK(recomputed_all_to_alls(false) == 2 * 2);
  CHECK(recomputed_all_to_alls(true) == 0);
}

TEST_CASE("a decode step's grouped GEMMs run, and read the weights of, only the experts that receive copies") {
  const model::ArchSpec arch = qwen3_moe();
  // 4 sequences on each of 8 GPUs (tp 1): 32 tokens, 8 of the 128 experts each. An expert misses a token with
  // probability 1 - 8/128, so it is idle with probability (120/128)^32; each GPU holds 16.
  const auto w = with_experts(test::decode_workload(4, 1024, 1), kEp);
  const model::LayerGraph g = model::build_layer_graph(arch, w, 1, test::variant(model::TpMode::kSp));
  const double active = 16.0 * (1.0 - std::pow(120.0 / 128.0, 32));
  const model::Op& gate_up = op_named(g, "L0.moe.experts.gate_up_proj");
  CHECK(gate_up.gemm.groups == static_cast<int64_t>(std::ceil(active)));  // 13.97: 14 problems
  CHECK(gate_up.gemm.groups == 14);
  const double weights = 14.0 * arch.hidden * 2 * arch.moe.expert_ffn * 2.0;
  CHECK(gate_up.bytes_read == Approx(weights + 32.0 * arch.hidden * 2.0).epsilon(1e-12));
  // A training batch leaves none idle.
  const model::LayerGraph train = model::build_layer_graph(arch, with_experts(test::forward_workload(1, 2048, 1), kEp),
                                                           1, test::variant(model::TpMode::kSp));
  CHECK(op_named(train, "L0.moe.experts.gate_up_proj").gemm.groups == 16);
}

TEST_CASE(
    "under expert TP (ep 1) every GPU computes its slice of every expert on every token, and one reduction sums "
    "them") {
  const model::ArchSpec arch = model::load_model_preset("qwen3-next-80b-a3b");
  constexpr int tp = 4;
  const model::TpShard shard = model::shard_for_tp(arch, tp, 1);
  CHECK(shard.expert_tp);
  CHECK(shard.experts == 512);
  CHECK(shard.expert_ffn == 512 / tp);
  // Decode, tp mode: every rank routes all 8 tokens (no all-to-all), its grouped GEMMs over the 80 copies of the
  // experts that get any (512 x (1 - (1 - 10/512)^8) = 74.9: 75 problems), each a quarter wide.
  model::Workload w = test::decode_workload(8, 2000, 1);
  const model::LayerGraph g = model::build_layer_graph(arch, w, tp, test::variant(model::TpMode::kTp));
  const model::Op& gate_up = op_named(g, "L0.moe.experts.gate_up_proj");
  CHECK(gate_up.gemm.m == 8 * 10);
  CHECK(gate_up.gemm.n == 2 * 512 / tp);
  CHECK(gate_up.gemm.groups == static_cast<int64_t>(std::ceil(512.0 * (1 - std::pow(1 - 10.0 / 512, 8)))));
  CHECK(op_named(g, "L0.moe.experts.down_proj").gemm.k == 512 / tp);
  CHECK(op_named(g, "L0.moe.shared_expert.gate_up_proj").gemm.n == 2 * 512 / tp);
  const auto& ops = g.ops();
  CHECK(std::none_of(ops.begin(), ops.end(), [](const model::Op& op) { return op.name == "L0.moe.dispatch"; }));
  // The routed and shared partial sums are reduced together, once.
  const model::Op& reduce = op_named(g, "L0.moe.experts.all_reduce");
  CHECK(reduce.tensor_bytes == 8.0 * arch.hidden * 2.0);
  CHECK(std::any_of(reduce.deps.begin(), reduce.deps.end(),
                    [&](const model::Dep& dep) { return g.op(dep.op).name == "L0.moe.shared_expert.residual"; }));
  // Training under sp: the router's gathered input, the gradient gathered before the experts' backward and the input
  // gradient reduce-scattered after the router's data gradient.
  model::Workload train = test::train_workload(1, 2048, 1);
  const model::LayerGraph t =
      model::build_layer_graph(model::load_model_preset("qwen3-30b-a3b"), train, 2, test::variant(model::TpMode::kSp));
  CHECK(op_named(t, "L0.moe.router").gemm.m == 2048);
  CHECK(op_named(t, "L0.moe.experts.reduce_scatter").collective == model::CollectiveKind::kReduceScatter);
  CHECK(op_named(t, "L0.moe.experts.backward.all_gather").collective == model::CollectiveKind::kAllGather);
  CHECK(op_named(t, "L0.moe.router.dgrad.reduce_scatter").collective == model::CollectiveKind::kReduceScatter);
  // Its expert slices sync with the data-parallel group like dense parameters: no expert buckets.
  CHECK(model::expert_parameters_at(arch, shard, 0) == 0);
}

TEST_CASE("under DeepEP a GPU receives each token once, and across nodes a token crosses once per destination node") {
  const model::ArchSpec arch = qwen3_moe();
  model::ExpertParallel ep;
  ep.dispatcher = model::Dispatcher::kDeepEp;
  ep.node_gpus = 8;
  const auto w = with_experts(test::forward_workload(2, 4096, 1), 16, ep);
  const model::LayerGraph g = model::build_layer_graph(arch, w, 2, test::variant(model::TpMode::kSp));
  const model::Op& dispatch = op_named(g, "L0.moe.dispatch");
  CHECK(dispatch.algorithm == model::CollectiveAlgorithm::kDeepEp);
  // 4096 rows per GPU, 16 GPUs of 8 experts each, 2 nodes of 64; a token's 8 distinct experts of 128 miss a set of e
  // experts with probability C(128 - e, 8) / C(128, 8).
  const auto miss = [](int held) {
    double p = 1;
    for (int j = 0; j < 8; ++j) p *= static_cast<double>(128 - held - j) / (128 - j);
    return p;
  };
  const double row = 2048 * 2.0, group_tokens = 16 * 4096.0;
  CHECK(dispatch.tensor_bytes == Approx(group_tokens * (1 - miss(8)) * row).epsilon(1e-12));
  CHECK(dispatch.message_bytes == Approx(4096 * 2 * (1 - miss(64)) * row).epsilon(1e-12));
  // Inside one node nothing crosses the network.
  model::ExpertParallel one_node = ep;
  one_node.node_gpus = 16;
  const model::LayerGraph inside = model::build_layer_graph(
      arch, with_experts(test::forward_workload(2, 4096, 1), 16, one_node), 2, test::variant(model::TpMode::kSp));
  CHECK(op_named(inside, "L0.moe.dispatch").message_bytes == 0);
}

TEST_CASE("an fp8 MoE decode step streams e4m3 expert weights, its grouped GEMMs at the fp8 rate") {
  const std::string text = R"(name: t
model: qwen3-30b-a3b
hardware: {gpu: h200-sxm, topology: nvswitch, nodes: 1}
workload: {phase: decode, batch: 64, context_len: 2048, layers: 2, dtype: DTYPE}
parallelism: {tp: 2, ep: 1}
variants: [{name: tp, tp_mode: tp}]
)";
  const auto grouped = [&](const std::string& dtype) {
    std::string yaml = text;
    yaml.replace(yaml.find("DTYPE"), 5, dtype);
    const sim::ScenarioRun run = sim::run_scenario(model::parse_scenario(yaml, "t.yaml"));
    return run.variants.front().metrics.time_s;
  };
  // Half the weight bytes to stream: the fp8 step is faster, and well short of half the time (attention and the
  // KV cache stay bf16).
  const double bf16 = grouped("bf16"), fp8 = grouped("fp8");
  CHECK(fp8 < bf16);
  CHECK(fp8 > 0.5 * bf16);
  const model::ArchSpec arch = qwen3_moe();
  model::Workload w = test::decode_workload(64, 2048, 1);
  w.dtype = model::Dtype::kFp8;
  const model::LayerGraph g = model::build_layer_graph(arch, w, 2, test::variant(model::TpMode::kTp));
  const model::Op& gate_up = op_named(g, "L0.moe.experts.gate_up_proj");
  CHECK(gate_up.fp8);
  CHECK(gate_up.gemm.groups > 1);
}

namespace {

// Qwen3-30B-A3B over EP 16 on two nodes of 8 (tp 1), DeepEP in `mode`, one layer of `phase`.
model::LayerGraph deepep_graph(model::DeepEpMode mode, model::Workload w) {
  model::ExpertParallel ep;
  ep.dispatcher = model::Dispatcher::kDeepEp;
  ep.deepep_mode = mode;
  ep.node_gpus = 8;
  return model::build_layer_graph(qwen3_moe(), with_experts(std::move(w), 16, ep), 1,
                                  test::variant(model::TpMode::kTp));
}

}  // namespace

TEST_CASE("DeepEP's low-latency kernels send one message per copy in decode, its normal kernels the prefill") {
  const model::LayerGraph decode = deepep_graph(model::DeepEpMode::kAuto, test::decode_workload(32, 2048, 1));
  const model::Op& dispatch = op_named(decode, "L0.moe.dispatch");
  CHECK(dispatch.algorithm == model::CollectiveAlgorithm::kDeepEpLowLatencyDispatch);
  // 32 tokens x 8 copies (balanced: the busiest GPU receives as many), each an fp8 row of 2048 with its 16 scales
  // and a 16-byte header; half of the group on the other node.
  const double copies = 32 * 8, message = 2048 + 2048 / 128 * 4 + 16;
  CHECK(dispatch.tensor_bytes == Approx(copies * message));
  CHECK(dispatch.message_bytes == Approx(copies * message / 2));
  const model::Op& combine = op_named(decode, "L0.moe.combine");
  CHECK(combine.algorithm == model::CollectiveAlgorithm::kDeepEpLowLatencyCombine);
  CHECK(combine.tensor_bytes == Approx(copies * 2048 * 2.0));
  // The kernels permute the copies into their experts' buffers and sum them back: no permutation ops around them.
  for (const char* name : {"L0.moe.permute", "L0.moe.sort", "L0.moe.unsort", "L0.moe.unpermute"}) {
    for (const model::Op& op : decode.ops()) CHECK(op.name != name);
  }
  // A prefill runs the normal kernels and their permutations.
  model::Workload prefill = test::forward_workload(2, 1024, 1);
  prefill.phase = model::Phase::kPrefill;
  const model::LayerGraph normal = deepep_graph(model::DeepEpMode::kAuto, prefill);
  CHECK(op_named(normal, "L0.moe.dispatch").algorithm == model::CollectiveAlgorithm::kDeepEp);
  CHECK(op_named(normal, "L0.moe.permute").kind == OpKind::kMemory);
  // deepep_mode forces either kind.
  CHECK(op_named(deepep_graph(model::DeepEpMode::kNormal, test::decode_workload(32, 2048, 1)), "L0.moe.dispatch")
            .algorithm == model::CollectiveAlgorithm::kDeepEp);
  CHECK(op_named(deepep_graph(model::DeepEpMode::kLowLatency, prefill), "L0.moe.dispatch").algorithm ==
        model::CollectiveAlgorithm::kDeepEpLowLatencyDispatch);
}

TEST_CASE("a low-latency dispatch takes its floor plus the slower of its NVLink and its network bytes") {
  const model::LayerGraph g = deepep_graph(model::DeepEpMode::kAuto, test::decode_workload(32, 2048, 1));
  const model::Op& op = op_named(g, "L0.moe.dispatch");
  const sim::GpuSpec gpu = test::gpu_preset("h200-sxm");
  const sim::CostModel cost(gpu, test::profile_preset("h200-sxm"),
                            sim::resolve_fabric(sim::FabricRequest{"ib-rail", 2}, gpu));
  const sim::DeepEpLowLatencyParams& l = *cost.profile().deepep->low_latency;
  const sim::CommPlan plan = sim::plan_deepep(op, cost);
  const double nvlink_s = op.tensor_bytes / (cost.port_Bps() * l.dispatch_nvlink_efficiency);
  const double network_s = op.message_bytes / (cost.fabric().nic_Bps * l.rdma_efficiency);
  REQUIRE(plan.outside);
  CHECK(plan.outside->latency_s == Approx(l.rdma_latency_s));  // bytes cross nodes: the RDMA floor
  CHECK(plan.outside->network == (network_s > nvlink_s));
  const double link_Bps = plan.outside->network ? cost.fabric().nic_Bps : cost.port_Bps();
  CHECK(plan.outside->link_bytes / link_Bps == Approx(std::max(nvlink_s, network_s)));
}

TEST_CASE("two-batch overlap in training interleaves each layer's MoE stages of two half micro-batches, both ways") {
  model::Workload w = with_experts(test::train_workload(4, 1024, 2), kEp);
  model::Variant v = test::variant(model::TpMode::kSp);
  v.two_batch_overlap = true;
  const model::LayerGraph g = model::build_layer_graph(qwen3_moe(), w, kTp, v);
  // An op's place in issue order.
  const auto id = [&](const std::string& name) {
    const auto& ops = g.ops();
    const auto at = std::find_if(ops.begin(), ops.end(), [&](const model::Op& op) { return op.name == name; });
    REQUIRE(at != ops.end());
    return at - ops.begin();
  };
  // Forward: both halves' dispatches before either's experts; half 0's combine all-to-all issued before half 1's
  // experts (it runs beside them), both before either's un-permutation.
  CHECK(id("half0.L1.moe.dispatch") < id("half1.L1.moe.dispatch"));
  CHECK(id("half1.L1.moe.dispatch") < id("half0.L1.moe.experts.gate_up_proj"));
  CHECK(id("half0.L1.moe.combine") < id("half1.L1.moe.experts.gate_up_proj"));
  CHECK(id("half1.L1.moe.combine") < id("half0.L1.moe.unpermute"));
  // Backward, mirrored: both combines' backward before either's expert gradients, half 0's dispatch backward
  // before half 1's expert gradients, both before either's router gradient.
  CHECK(id("half0.L1.moe.combine.backward") < id("half1.L1.moe.combine.backward"));
  CHECK(id("half1.L1.moe.combine.backward") < id("half0.L1.moe.experts.down_proj.dgrad"));
  CHECK(id("half0.L1.moe.dispatch.backward") < id("half1.L1.moe.experts.down_proj.dgrad"));
  CHECK(id("half1.L1.moe.dispatch.backward") < id("half0.L1.moe.router.dgrad"));
  // Each half routes its 2 sequences' rows (sharded over tp): half the copies of the whole micro-batch.
  const model::Op& half_permute = op_named(g, "half0.L0.moe.permute");
  model::Variant whole = test::variant(model::TpMode::kSp);
  const model::LayerGraph g1 = model::build_layer_graph(qwen3_moe(), w, kTp, whole);
  CHECK(half_permute.bytes_written == Approx(op_named(g1, "L0.moe.permute").bytes_written / 2));
  // The step's FLOPs are the whole micro-batch's.
  double flops = 0, whole_flops = 0;
  for (const model::Op& op : g.ops()) flops += op.flops;
  for (const model::Op& op : g1.ops()) whole_flops += op.flops;
  CHECK(flops == Approx(whole_flops).epsilon(0.01));
}

TEST_CASE("expert TP inside the group slices each expert over etp GPUs, gathering and scattering the slice's rows") {
  // Qwen3-30B-A3B, tp 2 x dp 8, experts over EP 8 with each sliced over 2 GPUs: 16 experts per GPU, half of each.
  const model::ArchSpec arch = qwen3_moe();
  model::Workload w = with_experts(test::train_workload(2, 2048, 1), 8);
  w.expert_parallel.tensor_degree = 2;
  w.data_parallel.degree = 8;
  w.data_parallel.member_stride = kTp;
  const model::LayerGraph g = model::build_layer_graph(arch, w, kTp, test::variant(model::TpMode::kSp));
  const double rank_copies = 2.0 * 2048 / kTp * 8, row = 2048 * 2.0;  // a rank's rows x 8 experts, bf16
  // The all-to-all between the GPUs of the same slice (2 apart), each its own copies; then the slice's two GPUs
  // gather each other's.
  const model::Op& dispatch = op_named(g, "L0.moe.dispatch");
  CHECK(dispatch.group_size == 8);
  CHECK(dispatch.group_stride == 2);
  CHECK(dispatch.tensor_bytes == Approx(rank_copies * row));
  const model::Op& gather = op_named(g, "L0.moe.etp.all_gather");
  CHECK(gather.collective == model::CollectiveKind::kAllGather);
  CHECK(gather.group_size == 2);
  CHECK(gather.group_stride == 1);
  CHECK(gather.tensor_bytes == Approx(2 * rank_copies * row));
  // The grouped GEMMs run the slice's rows at half the expert width; a reduce-scatter returns each GPU's share.
  const model::Op& gate_up = op_named(g, "L0.moe.experts.gate_up_proj");
  CHECK(gate_up.gemm.m == static_cast<int64_t>(2 * rank_copies));
  CHECK(gate_up.gemm.n == 2 * arch.moe.expert_ffn / 2);
  CHECK(op_named(g, "L0.moe.etp.reduce_scatter").collective == model::CollectiveKind::kReduceScatter);
  // The backward swaps them: the combine's gradient gathered, the dispatch's reduce-scattered.
  CHECK(op_named(g, "L0.moe.etp.reduce_scatter.backward").collective == model::CollectiveKind::kAllGather);
  CHECK(op_named(g, "L0.moe.etp.all_gather.backward").collective == model::CollectiveKind::kReduceScatter);
  // 16 experts per GPU, half of each; tp x dp / (ep x etp) = 1 GPU holds each slice: nothing to reduce.
  const model::TpShard s = model::shard_for_tp(arch, kTp, 8, 2);
  CHECK(s.experts == 16);
  CHECK(s.expert_ffn == arch.moe.expert_ffn / 2);
  for (const model::Op& op : g.ops()) CHECK(op.name.rfind("ddp.experts.", 0) == std::string::npos);
}
