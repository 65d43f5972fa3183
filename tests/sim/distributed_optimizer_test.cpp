// Megatron's distributed optimizer (distributed_optimizer: section): gradients reduce-scattered and parameters
// all-gathered per bucket, moving every parameter once each way; 6 + 12/d bytes per parameter; the overlaps hide
// what the closed form leaves hideable; the expert parameters over their own group.
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "base/input_error.hpp"
#include "model/memory/memory_footprint.hpp"
#include "model/memory/parameter_count.hpp"
#include "model/scenario.hpp"
#include "sim/engine/data_group.hpp"
#include "sim/run/scenario_run.hpp"
#include "test_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

// Llama-3.1-8B at tp=8 with 4 replicas on 4 ib-rail nodes, one sequence of 8192 tokens per replica.
std::string job(const std::string& sync, const std::string& nic = "") {
  return "name: zero1\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm, topology: ib-rail, nodes: 4" + nic +
         "}\nworkload: {phase: train, batch: 1, seq_len: 8192}\nparallelism: {tp: 8, dp: 4}\n" + sync +
         "variants: [{name: sp, tp_mode: sp}]\n" + test::h100_fixed_clock_calibration();
}

struct BucketOps {
  int gathers = 0, reductions = 0;
  double gathered_bytes = 0, reduced_bytes = 0;
};

BucketOps bucket_ops(const model::LayerGraph& graph) {
  BucketOps out;
  for (model::OpId id = 0; id < graph.size(); ++id) {
    const model::Op& op = graph.op(id);
    if (op.group != model::CommGroup::kData || op.tensor_bytes <= sizeof(float)) continue;
    const double d = op.group_size;
    // Each collective moves (d-1)/d of its tensor out of each rank (ring).
    CHECK(model::wire_bytes_per_rank(op) == Approx(op.tensor_bytes * (d - 1) / d).epsilon(1e-12));
    if (op.collective == model::CollectiveKind::kAllGather) {
      ++out.gathers;
      out.gathered_bytes += op.tensor_bytes;
    } else if (op.collective == model::CollectiveKind::kReduceScatter) {
      ++out.reductions;
      out.reduced_bytes += op.tensor_bytes;
    } else {
      FAIL("the distributed optimizer issued a " + model::to_string(op.collective));
    }
  }
  return out;
}

// When the op named `name` starts and ends on GPU 0 of pass 0.
std::pair<double, double> span_of(const sim::VariantRun& v, const std::string& name) {
  const sim::PassTrace& pass = v.passes.front();
  for (const sim::OpSpan& span : pass.timeline.spans) {
    if (span.rank == 0 && pass.graph.op(span.op).name == name) return {span.start_s, span.end_s};
  }
  throw std::logic_error("no op " + name);
}

}  // namespace

TEST_CASE("the distributed optimizer reduce-scatters every gradient once and all-gathers every parameter once",
          "[sim][distributed_optimizer]") {
  const model::Scenario s = model::parse_scenario(job("distributed_optimizer: {}\n"), "z.yaml");
  const double params = 32 * test::llama8b_layer_parameters_tp8() +
                        model::end_parameters_per_rank(s.arch, 8, true, true);  // untied embedding
  const BucketOps ops = bucket_ops(test::scenario_step_graph(s));
  // fp32 gradients in (the default reduce_dtype), bf16 parameters out.
  CHECK(ops.reduced_bytes == Approx(4.0 * params).epsilon(1e-9));
  CHECK(ops.gathered_bytes == Approx(2.0 * params).epsilon(1e-9));
  // Megatron's default bucket of max(40M, 1M x 4) parameters, closed between units in backward order: the head
  // (65.7M of 128256 x 4096 / 8) alone, then the layers two by two (27.3M each), the embedding alone.
  CHECK(model::megatron_default_bucket_parameters(4) == 40e6);
  CHECK(ops.reductions == 1 + 16 + 1);
  CHECK(ops.gathers == ops.reductions);
  // bucket_size 1: one bucket per unit; bf16 reduction halves the gradients' bytes.
  const model::Scenario small =
      model::parse_scenario(job("distributed_optimizer: {bucket_size: 1, reduce_dtype: bf16}\n"), "z.yaml");
  const BucketOps unit_ops = bucket_ops(test::scenario_step_graph(small));
  CHECK(unit_ops.reductions == 32 + 2);
  CHECK(unit_ops.reduced_bytes == Approx(2.0 * params).epsilon(1e-9));
}

TEST_CASE("the distributed optimizer holds 6 + 12/d bytes per parameter with fp32 gradients and 4 + 16/d with bf16",
          "[sim][distributed_optimizer]") {
  const auto footprint = [](const std::string& sync) {
    const model::Scenario s = model::parse_scenario(job(sync), "z.yaml");
    return model::memory_footprint(s.arch, model::whole_model_workload(s.arch, s.workload), s.variants.front(),
                                   s.parallelism.tp);
  };
  const model::MemoryFootprint ddp = footprint(""), zero = footprint("distributed_optimizer: {}\n"),
                               zero16 = footprint("distributed_optimizer: {reduce_dtype: bf16}\n");
  // The parameters per GPU, from DDP's 18 bytes per parameter (Megatron's undistributed row).
  const double params = ddp.gradient_bytes / 4.0;
  CHECK(ddp.optimizer_bytes == Approx(12.0 * params).epsilon(1e-12));
  const double d = 4;
  CHECK(zero.weights_bytes == ddp.weights_bytes);
  CHECK((zero.gradient_bytes + zero.optimizer_bytes) / params == Approx(4.0 + 12.0 / d).epsilon(1e-12));
  CHECK((zero16.gradient_bytes + zero16.optimizer_bytes) / params == Approx(2.0 + 16.0 / d).epsilon(1e-12));
  CHECK(zero.weights_bytes / params == Approx(2.0).epsilon(1e-3));  // bf16 parameters (the norms' too)
}

TEST_CASE("without overlap every bucket's collective is exposed, and the overlaps hide all but the closed form's floor",
          "[sim][distributed_optimizer]") {
  // A 200 GB/s NIC: each bucket's collectives shorter than its units' compute, so only the first gathers (before
  // any compute) and the last reductions (after it) cannot hide.
  const std::string nic = ", nic_GBps: 200";
  const sim::ScenarioRun none = sim::run_scenario(model::parse_scenario(
      job("distributed_optimizer: {overlap_grad_reduce: false, overlap_param_gather: false}\n", nic), "z.yaml"));
  const sim::ScenarioRun both = sim::run_scenario(model::parse_scenario(
      job("distributed_optimizer: {overlap_grad_reduce: true, overlap_param_gather: true}\n", nic), "z.yaml"));
  const sim::Metrics& n = none.variants.front().metrics;
  const sim::Metrics& b = both.variants.front().metrics;
  // The same collectives in flight; unoverlapped, each runs after the backward or the optimizer, exposed whole.
  CHECK(b.data_comm_s == Approx(n.data_comm_s).epsilon(1e-9));
  CHECK(n.exposed_data_comm_s == Approx(n.data_comm_s).epsilon(1e-9));
  // The closed form's floor, each collective alone (as they run unoverlapped): the first bucket's gather (the
  // embedding's, bucket 17) before any kernel and the last bucket's reduction after the last.
  const auto length = [&](const std::string& name) {
    const auto [start, end] = span_of(none.variants.front(), name);
    return end - start;
  };
  const double floor = length("zero1.bucket17.all_gather") + length("zero1.bucket17.reduce_scatter");
  CHECK(b.exposed_data_comm_s >= floor);
  // The step saves at most what is hideable, and most of it: NCCL's ring kernels take SMs from the kernels beside
  // them (the SM-sharing model), and a collective beside a wait for a TP collective stays counted as exposed.
  const double hideable = n.data_comm_s - floor;
  const double saved = n.time_s - b.time_s;
  CHECK(saved <= hideable);
  CHECK(saved >= 0.6 * hideable);
  CHECK(n.exposed_data_comm_s - b.exposed_data_comm_s >= 0.6 * hideable);
}

TEST_CASE("an MoE model's distributed optimizer shards expert state over the expert-data-parallel group",
          "[sim][distributed_optimizer][moe]") {
  // Qwen3-30B-A3B, tp 1, ep 8 on each of 2 nodes, dp 16: the dense parameters over 16 GPUs, the experts over the
  // 2 GPUs (one per node) that hold the same 16 experts: Megatron's expert_data_parallel_size = world / (ep x etp).
  const std::string text =
      "name: m\nmodel: qwen3-30b-a3b\nhardware: {gpu: h200-sxm, topology: ib-rail, nodes: 2}\n"
      "workload: {phase: train, batch: 1, seq_len: 1024, layers: 2, recompute: none}\n"
      "parallelism: {tp: 1, dp: 16, ep: 8}\ndistributed_optimizer: {bucket_size: 1}\n"
      "variants: [{name: tp, tp_mode: tp}]\n";
  const model::Scenario s = model::parse_scenario(text, "m.yaml");
  const model::LayerGraph graph = test::scenario_step_graph(s);
  std::map<std::string, int> groups;  // per buffer, the group size its reduce-scatters run over
  for (model::OpId id = 0; id < graph.size(); ++id) {
    const model::Op& op = graph.op(id);
    if (op.collective != model::CollectiveKind::kReduceScatter || op.group != model::CommGroup::kData) continue;
    groups[op.name.find("experts") != std::string::npos ? "experts" : "dense"] = op.group_size;
  }
  CHECK(groups["dense"] == 16);
  CHECK(groups["experts"] == 2);
  const model::TpShard shard = model::shard_for_tp(s.arch, 1, 8, 1);
  const double experts = model::expert_parameters_at(s.arch, shard, 0) + model::expert_parameters_at(s.arch, shard, 1);
  const model::MemoryFootprint m = model::memory_footprint(s.arch, s.workload, s.variants.front(), 1);
  const double params = m.gradient_bytes / 4.0;
  CHECK(m.optimizer_bytes == Approx(12.0 * ((params - experts) / 16 + experts / 2)).epsilon(1e-12));
}

TEST_CASE("the distributed optimizer is refused at its key beside fsdp or ddp, with dp 1, and its keys are checked",
          "[sim][distributed_optimizer]") {
  const auto parse = [](const std::string& text) { return model::parse_scenario(text, "z.yaml"); };
  CHECK_THROWS_WITH(parse(job("fsdp: {}\ndistributed_optimizer: {}\n")),
                    Contains("z.yaml:7:") && Contains("distributed_optimizer and fsdp") && Contains("give one"));
  CHECK_THROWS_WITH(parse(job("ddp: {}\ndistributed_optimizer: {}\n")), Contains("distributed_optimizer and ddp"));
  std::string single = job("distributed_optimizer: {}\n");
  single.replace(single.find("dp: 4"), 5, "dp: 1");
  CHECK_THROWS_WITH(parse(single), Contains("z.yaml:6:") && Contains("distributed_optimizer needs parallelism.dp"));
  CHECK_THROWS_WITH(parse(job("distributed_optimizer: {overlap: true}\n")),
                    Contains("z.yaml:6:") && Contains("overlap_grad_reduce"));
  CHECK_THROWS_WITH(parse(job("distributed_optimizer: {bucket_size: 0}\n")), Contains("z.yaml:6:"));
}

TEST_CASE("the distributed optimizer's step is the same with every replica simulated (--no-symmetry)",
          "[sim][distributed_optimizer]") {
  std::string text = job("distributed_optimizer: {overlap_grad_reduce: true, overlap_param_gather: true}\n");
  text.replace(text.find("seq_len: 8192"), 13, "seq_len: 2048, layers: 4");
  const model::Scenario s = model::parse_scenario(text, "z.yaml");
  const double one = sim::run_scenario(s).variants.front().metrics.time_s;
  const double every = sim::run_scenario(s, {}, nullptr, sim::Symmetry::kEveryMember).variants.front().metrics.time_s;
  // 1%: the replicas' point-to-point steps share ports the closed form charges whole (as for FSDP).
  CHECK(every == Approx(one).epsilon(0.01));
}

TEST_CASE("FSDP of an MoE model gathers and reduces the experts over the expert-data-parallel group",
          "[sim][distributed_optimizer][moe]") {
  // As above, under FSDP: each layer's dense parameters over the 16 replicas, its experts over the 2 GPUs holding
  // them; the state sharded alike.
  const std::string text =
      "name: m\nmodel: qwen3-30b-a3b\nhardware: {gpu: h200-sxm, topology: ib-rail, nodes: 2}\n"
      "workload: {phase: train, batch: 1, seq_len: 1024, layers: 2, recompute: none}\n"
      "parallelism: {tp: 1, dp: 16, ep: 8}\nfsdp: {}\nvariants: [{name: tp, tp_mode: tp}]\n";
  const model::Scenario s = model::parse_scenario(text, "m.yaml");
  const model::LayerGraph graph = test::scenario_step_graph(s);
  const model::TpShard shard = model::shard_for_tp(s.arch, 1, 8, 1);
  const double experts = model::expert_parameters_at(s.arch, shard, 0);
  int expert_gathers = 0;
  for (model::OpId id = 0; id < graph.size(); ++id) {
    const model::Op& op = graph.op(id);
    if (op.group != model::CommGroup::kData || op.tensor_bytes <= sizeof(float)) continue;
    const bool expert = op.name.find("fsdp.experts.") != std::string::npos;
    CHECK(op.group_size == (expert ? 2 : 16));
    if (expert && op.collective == model::CollectiveKind::kAllGather) {
      ++expert_gathers;
      CHECK(op.tensor_bytes == Approx(2.0 * experts).epsilon(1e-12));
    }
  }
  CHECK(expert_gathers == 2 + 1);  // both layers before their forward, the first again before its backward
  const model::MemoryFootprint m = model::memory_footprint(s.arch, s.workload, s.variants.front(), 1);
  const model::MemoryFootprint whole = model::memory_footprint(
      s.arch,
      model::parse_scenario(text.substr(0, text.find("fsdp:")) + "variants: [{name: tp, tp_mode: tp}]\n", "m.yaml")
          .workload,
      s.variants.front(), 1);
  const double params = whole.gradient_bytes / 4.0, all_experts = 2 * experts;
  CHECK(m.optimizer_bytes == Approx(12.0 * ((params - all_experts) / 16 + all_experts / 2)).epsilon(1e-12));
}
