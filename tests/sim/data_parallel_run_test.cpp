// Data-parallel training steps (parallelism.dp > 1): FSDP's gathers and reductions move each unit's parameters
// and gradients (d-1)/d per rank, DDP all-reduces every gradient once in buckets, the data group's collectives
// take their closed form over the NICs and share them, and FSDP shards the optimizer state.
#include <catch2/catch.hpp>
#include <string>

#include "base/input_error.hpp"
#include "input/sweep.hpp"
#include "model/memory/memory_footprint.hpp"
#include "model/memory/parameter_count.hpp"
#include "model/scenario.hpp"
#include "sim/engine/data_group.hpp"
#include "sim/report/breakdown.hpp"
#include "sim/run/scenario_run.hpp"
#include "test_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

// Llama-3.1-8B at tp=8 with `dp` replicas on dp ib-rail nodes: one data-parallel group per local GPU, one member
// per node.
std::string job(const std::string& sync, int dp = 4, const std::string& workload_extra = "",
                const std::string& nic = "") {
  return "name: dp\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm, topology: ib-rail, nodes: " + std::to_string(dp) +
         nic + "}\nworkload: {phase: train, batch: 1, seq_len: 2048" + workload_extra +
         "}\nparallelism: {tp: 8, dp: " + std::to_string(dp) + "}\n" + sync + "variants: [{name: sp, tp_mode: sp}]\n";
}

struct DataOps {
  int gathers = 0, reductions = 0, all_reduces = 0;
  double all_reduced_bytes = 0;
};

DataOps data_ops(const model::LayerGraph& graph, double layer_params) {
  DataOps out;
  for (model::OpId id = 0; id < graph.size(); ++id) {
    const model::Op& op = graph.op(id);
    if (op.group != model::CommGroup::kData) continue;
    const double d = op.group_size;
    if (op.collective == model::CollectiveKind::kAllGather && op.module >= 0) {
      ++out.gathers;
      // (d-1)/d of the layer's bf16 parameters out of each rank.
      CHECK(model::wire_bytes_per_rank(op) == Approx(2.0 * layer_params * (d - 1) / d).epsilon(1e-12));
    } else if (op.collective == model::CollectiveKind::kReduceScatter && op.module >= 0) {
      ++out.reductions;
      CHECK(model::wire_bytes_per_rank(op) == Approx(4.0 * layer_params * (d - 1) / d).epsilon(1e-12));
    } else if (op.collective == model::CollectiveKind::kAllReduce && op.tensor_bytes > 4) {
      ++out.all_reduces;
      out.all_reduced_bytes += op.tensor_bytes;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("FSDP gathers each layer's parameters and reduce-scatters its gradients, (d-1)/d of them per rank",
          "[sim][data_parallel]") {
  const model::Scenario s = model::parse_scenario(job("fsdp: {}\n", 4, ", microbatches: 2"), "dp.yaml");
  const DataOps ops = data_ops(test::scenario_step_graph(s), test::llama8b_layer_parameters_tp8());
  // Per micro-batch: every layer before its forward, all but the last again before its backward; every layer's
  // gradients once.
  CHECK(ops.gathers == 2 * (32 + 31));
  CHECK(ops.reductions == 2 * 32);
  CHECK(ops.all_reduces == 0);
  model::Scenario kept = s;
  kept.workload.data_parallel.reshard_after_forward = false;
  CHECK(data_ops(test::scenario_step_graph(kept), test::llama8b_layer_parameters_tp8()).gathers == 2 * 32);
}

TEST_CASE("DDP all-reduces every gradient once, in the last micro-batch, in buckets of bucket_MB after a 1 MiB one",
          "[sim][data_parallel]") {
  const model::Scenario s = model::parse_scenario(job("ddp: {bucket_MB: 100}\n", 4, ", microbatches: 3"), "dp.yaml");
  const model::LayerGraph graph = test::scenario_step_graph(s);
  const DataOps ops = data_ops(graph, test::llama8b_layer_parameters_tp8());
  const double params = model::layer_parameters_per_rank(s.arch, model::shard_for_tp(s.arch, 8), {0, 32}) +
                        model::embedding_parameters_per_rank(s.arch, 8);
  CHECK(ops.all_reduced_bytes == Approx(4.0 * params).epsilon(1e-12));
  CHECK(ops.gathers == 0);
  // Each bucket closes at the first unit past its size: 100 MiB of fp32 gradients, a layer's 27 MiB short of it.
  const double bucket = 100.0 * 1024 * 1024, layer = 4.0 * test::llama8b_layer_parameters_tp8();
  for (model::OpId id = 0; id < graph.size(); ++id) {
    const model::Op& op = graph.op(id);
    if (op.group != model::CommGroup::kData || op.tensor_bytes <= 4) continue;
    CHECK(op.name.rfind("mb2.", 0) == 0);  // the last micro-batch's backward
    CHECK(op.tensor_bytes < bucket + 4.0 * model::embedding_parameters_per_rank(s.arch, 8) + layer);
  }
  CHECK(ops.all_reduces >= static_cast<int>(4.0 * params / (bucket + layer)));
}

TEST_CASE("HSDP gathers and reduce-scatters over its shard group and all-reduces each shard over its replicas",
          "[sim][data_parallel]") {
  // dp 8 as 4 shards x 2 replicas: a shard group is 4 consecutive replicas (8 GPUs apart at tp 8), a replicate
  // group the 2 replicas 32 GPUs apart that hold the same shard.
  const model::Scenario s = model::parse_scenario(job("fsdp: {shard_degree: 4}\n", 8), "dp.yaml");
  const model::LayerGraph graph = test::scenario_step_graph(s);
  const double layer = test::llama8b_layer_parameters_tp8();
  int gathers = 0, reductions = 0, all_reduces = 0;
  for (model::OpId id = 0; id < graph.size(); ++id) {
    const model::Op& op = graph.op(id);
    if (op.group != model::CommGroup::kData || op.module < 0) continue;
    if (op.collective == model::CollectiveKind::kAllGather) {
      ++gathers;
      CHECK(op.group_size == 4);
      CHECK(op.group_stride == 8);
      CHECK(model::wire_bytes_per_rank(op) == Approx(2.0 * layer * 3 / 4).epsilon(1e-12));
    } else if (op.collective == model::CollectiveKind::kReduceScatter) {
      ++reductions;
      CHECK(op.group_size == 4);
      CHECK(model::wire_bytes_per_rank(op) == Approx(4.0 * layer * 3 / 4).epsilon(1e-12));
    } else if (op.collective == model::CollectiveKind::kAllReduce) {
      ++all_reduces;
      // The fp32 quarter this rank reduced, all-reduced over 2 replicas: 2 (2-1)/2 of it.
      CHECK(op.group_size == 2);
      CHECK(op.group_stride == 32);
      CHECK(op.tensor_bytes == Approx(4.0 * layer / 4).epsilon(1e-12));
      CHECK(model::wire_bytes_per_rank(op) == Approx(4.0 * layer / 4).epsilon(1e-12));
    }
  }
  CHECK(gathers == 32 + 31);
  CHECK(reductions == 32);
  CHECK(all_reduces == reductions);
  // Parameters, gradients and optimizer state in quarters, not eighths.
  const sim::ScenarioRun hybrid = sim::run_scenario(s);
  const sim::ScenarioRun full = sim::run_scenario(model::parse_scenario(job("fsdp: {}\n", 8), "dp.yaml"));
  CHECK(hybrid.variants.front().memory->optimizer_bytes ==
        Approx(2 * full.variants.front().memory->optimizer_bytes).epsilon(1e-12));
  CHECK(hybrid.variants.front().passes.front().graph.size() > full.variants.front().passes.front().graph.size());
}

TEST_CASE("a data-group collective alone takes its closed form, and two at once share the GPU's NIC",
          "[sim][data_parallel]") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const sim::Fabric job = sim::resolve_fabric(sim::FabricRequest{"ib-rail", 16}, gpu);
  const sim::CostModel cost(gpu, test::profile_preset("h100-sxm"), sim::group_fabric(job, 8));
  const double bytes = 512e6;
  model::DataParallel replicas;
  replicas.degree = 16;
  replicas.member_stride = 8;
  auto graph_of = [&](int collectives) {
    model::LayerGraph graph(8);
    model::ProgramBuilder b(graph, 2.0);
    for (int i = 0; i < collectives; ++i) {
      b.data_collective("ar" + std::to_string(i), model::CollectiveKind::kReduceScatter, bytes, replicas,
                        i == 0 ? model::Stream::kComm3 : model::Stream::kComm4, "", {});
    }
    return graph;
  };
  const model::LayerGraph one = graph_of(1);
  const sim::CommPlan plan = sim::plan_data_group(one.op(0), cost);
  // The group: one GPU on each of 16 nodes, each on its own NIC.
  const sim::Fabric group = sim::data_group_fabric(cost.fabric(), 8, 16);
  CHECK(group.nodes == 16);
  CHECK(group.gpus_per_node == 1);
  const sim::CostModel group_cost(gpu, cost.profile(), group);
  const double closed_form = sim::idle_seconds(plan, group_cost);
  REQUIRE(plan.outside);
  CHECK(plan.outside->network);
  // 15/16 of the tensor through one 50 GB/s NIC at the network's efficiency.
  const double link_s = bytes * 15 / 16 / (50e9 * cost.profile().network->link_efficiency);
  CHECK(plan.outside->link_bytes / 50e9 == Approx(link_s).epsilon(1e-9));
  CHECK(plan.outside->latency_s + link_s == Approx(closed_form).epsilon(1e-9));
  const double alone = sim::simulate(one, cost).makespan_s;
  CHECK(alone == Approx(closed_form).epsilon(1e-6));
  // On two streams at once, each moves its bytes at half the NIC: both end after the latency and twice the bytes.
  const double both = sim::simulate(graph_of(2), cost).makespan_s;
  CHECK(both == Approx(plan.outside->latency_s + 2 * link_s).epsilon(1e-6));
}

TEST_CASE("a data-parallel group inside a node runs over NVLink: tp=2 leaves room for four replicas per node",
          "[sim][data_parallel]") {
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const sim::Fabric node = sim::resolve_fabric(sim::FabricRequest{"ib-rail", 2}, gpu);
  const sim::Fabric inside = sim::data_group_fabric(sim::group_fabric(node, 2), 2, 4);
  CHECK(inside.nodes == 1);
  CHECK_FALSE(inside.spans_nodes(4));
  const sim::Fabric across = sim::data_group_fabric(sim::group_fabric(node, 2), 2, 8);
  CHECK(across.nodes == 2);
  CHECK(across.gpus_per_node == 4);
  // Two members 6 apart (a 4-stage pipeline's first and last stage at tp=2) sit in the same 8-GPU node too.
  CHECK_FALSE(sim::data_group_fabric(sim::group_fabric(node, 2), 6, 2).spans_nodes(2));
  CHECK(sim::data_group_fabric(sim::group_fabric(node, 2), 6, 3).spans_nodes(3));
}

TEST_CASE("FSDP shards gradients and optimizer state over the replicas, and dp: 1 is the training step unchanged",
          "[sim][data_parallel]") {
  const sim::ScenarioRun fsdp = sim::run_scenario(model::parse_scenario(job("fsdp: {}\n"), "dp.yaml"));
  const sim::ScenarioRun ddp = sim::run_scenario(model::parse_scenario(job(""), "dp.yaml"));
  const model::MemoryFootprint& sharded = *fsdp.variants.front().memory;
  const model::MemoryFootprint& whole = *ddp.variants.front().memory;
  CHECK(sharded.optimizer_bytes == Approx(whole.optimizer_bytes / 4).epsilon(1e-12));
  CHECK(sharded.device_bytes() < whole.device_bytes());
  // The same step on one replica: no data-group collective, the time of the plain training step.
  const std::string one = job("", 1);
  const sim::ScenarioRun single = sim::run_scenario(model::parse_scenario(one, "dp.yaml"));
  std::string plain = one;
  plain.replace(plain.find(", dp: 1"), 7, "");
  CHECK(single.variants.front().metrics.time_s ==
        sim::run_scenario(model::parse_scenario(plain, "dp.yaml")).variants.front().metrics.time_s);
  // The replicas' synchronisation costs time a replica alone does not spend.
  CHECK(fsdp.variants.front().metrics.time_s > single.variants.front().metrics.time_s);
  CHECK(ddp.variants.front().metrics.time_s > single.variants.front().metrics.time_s);
}

TEST_CASE("a slower NIC exposes more of FSDP's gathers: the step grows as the network shrinks",
          "[sim][data_parallel]") {
  const auto step = [](const std::string& nic) {
    return sim::run_scenario(model::parse_scenario(job("fsdp: {}\n", 4, "", nic), "dp.yaml"))
        .variants.front()
        .metrics.time_s;
  };
  const double fast = step(""), slow = step(", nic_GBps: 2");
  CHECK(slow > fast * 1.2);
}

TEST_CASE("data parallelism is refused at its key outside training, with both sections, or where it cannot be placed",
          "[sim][data_parallel]") {
  const auto parse = [](const std::string& text) { return model::parse_scenario(text, "dp.yaml"); };
  std::string forward = job("");
  forward.replace(forward.find("phase: train"), 12, "phase: forward");
  CHECK_THROWS_WITH(parse(forward), Contains("dp.yaml:5:") && Contains("needs workload.phase train"));
  CHECK_THROWS_WITH(parse(job("fsdp: {}\nddp: {}\n")), Contains("dp.yaml:7:") && Contains("give one of them"));
  CHECK_THROWS_WITH(parse(job("fsdp: {shard_degree: 3}\n")),
                    Contains("dp.yaml:6:") && Contains("must divide the 4 replicas") &&
                        Contains("valid: a divisor of parallelism.dp (4: full sharding) from 2"));
  CHECK_THROWS_WITH(parse(job("fsdp: {}\n", 1)), Contains("fsdp needs parallelism.dp of 2 or more"));
  CHECK_THROWS_WITH(parse(job("fsdp: {reshard: true}\n")), Contains("reshard_after_forward"));
  std::string crowded = job("");
  crowded.replace(crowded.find("nodes: 4"), 8, "nodes: 2");
  CHECK_THROWS_WITH(sim::run_scenario(parse(crowded)),
                    Contains("tp x dp = 8 x 4 = 32 GPUs needs more than the 16") && Contains("nodes: 4"));
}

TEST_CASE("under a pipeline each stage's replicas gather once per step and reduce after the last backward",
          "[sim][data_parallel][pipeline]") {
  // Llama-3.1-8B over tp=8 x pp=2 x dp=2 on 4 nodes: stage s of replica k on node 2s + k.
  const std::string text =
      "name: dp\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm, topology: ib-rail, nodes: 4}\n"
      "workload: {phase: train, batch: 1, seq_len: 2048, microbatches: 4}\nparallelism: {tp: 8, pp: 2, dp: 2}\n"
      "fsdp: {}\nvariants: [{name: sp, tp_mode: sp}]\n";
  const sim::ScenarioRun fsdp = sim::run_scenario(model::parse_scenario(text, "dp.yaml"));
  std::string alone = text;
  alone.replace(alone.find("nodes: 4"), 8, "nodes: 2");
  alone.replace(alone.find(", dp: 2"), 7, "");
  alone.replace(alone.find("fsdp: {}\n"), 9, "");
  const sim::ScenarioRun replica = sim::run_scenario(model::parse_scenario(alone, "dp.yaml"));
  const sim::PipelineRun& p = *fsdp.variants.front().pipeline;
  const sim::PipelineRun& q = *replica.variants.front().pipeline;
  REQUIRE(p.stages.size() == 2);
  // The passes are the replica's own; every chain of 1F1B runs through stage 0's first forward, which now ends
  // when its gathers do: the passes' span grows by that much at least.
  CHECK(p.pipeline_s >= q.pipeline_s + (p.stages[0].gathered_forward_s - q.stages[0].forward_s) - 1e-9);
  for (size_t s = 0; s < 2; ++s) {
    CAPTURE(s);
    CHECK(p.stages[s].forward_s == Approx(q.stages[s].forward_s).epsilon(1e-12));
    // The gathers of 16 layers over one NIC outlast the forward they overlap.
    CHECK(p.stages[s].gathered_forward_s > p.stages[s].forward_s);
    CHECK(p.stages[s].reduce_tail_s > 0);
    CHECK(p.stages[s].end_s >= p.stages[s].busy_s + p.stages[s].optimizer_s);
    // Parameters stay gathered for the step; gradients and AdamW state are halved.
    CHECK(p.stages[s].memory.optimizer_bytes == Approx(q.stages[s].memory.optimizer_bytes / 2).epsilon(1e-12));
  }
  CHECK(fsdp.variants.front().metrics.time_s > replica.variants.front().metrics.time_s);
  // Exposed communication by dimension: the data group's, the TP group's the rest of exposed_comm_s, the sends'
  // what they add to the step.
  const sim::ExposedByDimension e = sim::exposed_by_dimension(fsdp.variants.front());
  CHECK(e.dp_s == fsdp.variants.front().metrics.exposed_data_comm_s);
  CHECK(e.dp_s > 0);
  CHECK(e.tp_s + e.dp_s == Approx(fsdp.variants.front().metrics.exposed_comm_s).epsilon(1e-12));
  CHECK(e.pp_s == p.send_exposed_s);
  CHECK(sim::exposed_by_dimension(replica.variants.front()).dp_s == 0);
  // Resharding after each forward would gather every micro-batch again: refused under a pipeline.
  std::string reshard = text;
  reshard.replace(reshard.find("fsdp: {}"), 8, "fsdp: {reshard_after_forward: true}");
  CHECK_THROWS_WITH(model::parse_scenario(reshard, "dp.yaml"),
                    Contains("dp.yaml:6:") && Contains("valid: false, the default under a pipeline"));
}

TEST_CASE(
    "parallelism.order places the stages inside the replicas' span: sends stay in a node, the data group "
    "crosses nodes",
    "[sim][data_parallel][pipeline]") {
  // Llama-3.1-8B over tp=4 x pp=2 x dp=2 on two 8-GPU nodes. Innermost first:
  //   tp, dp, pp: replica k of stage s is GPUs 8s + 4k..: the two replicas share a node, the stages do not;
  //   tp, pp, dp: stage s of replica k is GPUs 8k + 4s..: a node holds a whole pipeline, the replicas do not.
  const auto text = [](const std::string& order) {
    return "name: order\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm, topology: ib-rail, nodes: 2}\n"
           "workload: {phase: train, batch: 1, seq_len: 2048, microbatches: 4}\n"
           "parallelism: {tp: 4, pp: 2, dp: 2" +
           order + "}\nfsdp: {}\nvariants: [{name: sp, tp_mode: sp}]\n";
  };
  const model::Scenario replicas_inside = model::parse_scenario(text(""), "order.yaml");
  const model::Scenario stages_inside = model::parse_scenario(text(", order: [tp, pp, dp]"), "order.yaml");
  CHECK(replicas_inside.parallelism.order == model::MeshOrder::kTpDpPp);
  CHECK(stages_inside.parallelism.order == model::MeshOrder::kTpPpDp);
  CHECK(replicas_inside.workload.data_parallel.member_stride == 4);
  CHECK(stages_inside.workload.data_parallel.member_stride == 8);
  const sim::VariantRun a = sim::run_scenario(replicas_inside).variants.front();
  const sim::VariantRun b = sim::run_scenario(stages_inside).variants.front();
  REQUIRE(a.pipeline);
  REQUIRE(b.pipeline);
  CHECK(a.pipeline->hop_crosses_nodes == std::vector<bool>{true});
  CHECK(b.pipeline->hop_crosses_nodes == std::vector<bool>{false});
  // The same collectives either way; over a 50 GB/s NIC instead of a 450 GB/s NVLink port they take longer in
  // flight.
  CHECK(b.metrics.data_comm_s > 3 * a.metrics.data_comm_s);
  // A member stride of 8 on 8-GPU nodes: one member per node, each on its own NIC; of 4: both in one node.
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const sim::Fabric tp_group = sim::group_fabric(sim::resolve_fabric(sim::FabricRequest{"ib-rail", 2}, gpu), 4);
  CHECK(sim::data_group_fabric(tp_group, 8, 2).spans_nodes(2));
  CHECK_FALSE(sim::data_group_fabric(tp_group, 4, 2).spans_nodes(2));
}

TEST_CASE("parallelism.order is refused at its key unless it lists tp, pp and dp once each with tp first",
          "[model][data_parallel]") {
  const auto parse = [](const std::string& order, const std::string& sizes = "pp: 2, dp: 2") {
    return model::parse_scenario(
        "name: order\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm, topology: ib-rail, nodes: 2}\n"
        "workload: {phase: train, batch: 1, seq_len: 2048, microbatches: 4}\n"
        "parallelism: {tp: 4, " +
            sizes + ", order: " + order + "}\nvariants: [{name: sp, tp_mode: sp}]\n",
        "order.yaml");
  };
  for (const std::string bad : {"[dp, tp, pp]", "[tp, tp, pp]", "[tp, pp]", "tp-pp-dp", "[tp, pp, ep]"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH(parse(bad), Contains("order.yaml:5:") && Contains("with tp first") &&
                                      Contains("valid: [tp, dp, pp] (the default) or [tp, pp, dp]"));
  }
  CHECK_THROWS_WITH(parse("[tp, pp, dp]", "pp: 2"), Contains("order.yaml:5:") && Contains("needs pp > 1 and dp > 1"));
  CHECK(parse("[tp, dp, pp]").parallelism.order == model::MeshOrder::kTpDpPp);
}

TEST_CASE("a sweep over dp at a fixed global batch holds the same sequences per step, each replica fewer micro-batches",
          "[sim][data]") {
  // 16 sequences of 2048 tokens per step over 1, 2 and 4 replicas of tp=2 on one node: 8, 4 and 2 micro-batches
  // of 2 sequences each replica; dp=3 does not divide them and is refused at its sweep value.
  const model::Scenario base = model::parse_scenario(
      "name: g\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nworkload: {phase: train, batch: 2, seq_len: 2048, "
      "layers: 1, global_batch: 16}\nparallelism: {tp: 2, dp: 1}\nvariants: [{name: sp, tp_mode: sp}]\n"
      "sweep:\n  parallelism.dp: [1, 2, 3, 4]\n" +
          test::h100_fixed_clock_calibration(),
      "g.yaml");
  const std::vector<model::SweepPoint> points = model::expand_sweep(base, true);
  REQUIRE(points.size() == 4);
  CHECK_THAT(points[2].error, Contains("g.yaml:8:26: sweep value parallelism.dp=3") &&
                                  Contains("global_batch 16 does not divide") && Contains("a multiple of 6"));
  std::vector<double> step, forward;
  for (const size_t i : {0, 1, 3}) {
    const model::Scenario& s = points[i].scenario;
    REQUIRE(points[i].error.empty());
    CHECK(s.parallelism.dp * s.workload.microbatches * s.workload.batch == 16);
    const sim::VariantRun v = sim::run_scenario(s).variants.front();
    step.push_back(v.metrics.time_s);
    for (const auto& [stage, seconds] : sim::stage_times(v.passes.front())) {
      if (stage == "forward") forward.push_back(seconds);
    }
  }
  REQUIRE(forward.size() == 3);
  // Each replica runs the same micro-batch program, dp times fewer of them: its forwards take 1/dp of the time
  // (within 1%: the first micro-batch's launches and the replicas' hooks differ slightly).
  CHECK(forward[0] / forward[1] == Approx(2).epsilon(0.01));
  CHECK(forward[0] / forward[2] == Approx(4).epsilon(0.01));
  // The step shortens, by less than dp: each replica's optimizer runs over all its parameters and the gradients'
  // all-reduce grows with the replicas (a fixed micro-batch count per replica would keep the step as long).
  CHECK(step[1] < step[0]);
  CHECK(step[2] < step[1]);
  CHECK(step[0] / step[1] < 2);
  CHECK(step[0] / step[2] < 4);
}
