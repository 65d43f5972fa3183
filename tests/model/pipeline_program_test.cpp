// A pipelined step as one program over every stage (--no-symmetry): each stage's passes in the schedule's order,
// copies of its chunk's ops per micro-batch, a send wherever a pass's input comes from another stage, and under a
// zero-bubble schedule the weight gradients as passes of their own.
#include <catch2/catch.hpp>
#include <string>

#include "model/graph/graph_builder.hpp"
#include "model/layers/fp8_recipe.hpp"
#include "model/pipeline/pipeline_program.hpp"
#include "model/pipeline/pipeline_spec.hpp"
#include "model/scenario.hpp"
#include "sim/engine/pipeline_timing.hpp"
#include "test_support.hpp"

using namespace tpsim;
using model::PipelinePass;
using model::PipelineScheduleKind;

namespace {

// Two chunks of Llama-3.1-8B's layers (2 each, no ends) at tp 2 under sequence parallelism, for one micro-batch.
model::LayerGraph chunk_program() {
  const model::Scenario s = model::parse_scenario(
      "name: pp\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nworkload: {phase: train, batch: 1, seq_len: 2048, "
      "layers: 4}\nparallelism: {tp: 2}\nvariants: [{name: sp, tp_mode: sp}]\n",
      "pp.yaml");
  model::Workload w = model::chunk_workload(s.workload, model::ModelChunk{2, false, false});
  w.optimizer = false;
  return model::build_pass_graph(s.arch, w, model::primary_pass(w), 2, s.variants.front());
}

// The schedule over 2 stages and 2 micro-batches, each step one unit long as time_pipeline runs it.
struct Built {
  model::PipelineSchedule schedule;
  model::PipelineProgram program;
};

Built build(PipelineScheduleKind kind, const model::LayerGraph& chunk, double send_bytes) {
  Built b;
  b.schedule = model::make_pipeline_schedule(kind, 2, 2);
  const model::PipelineTiming timing = sim::time_pipeline(b.schedule, model::ChunkCosts{1.0, 2.0, 0.5});
  b.program = model::build_pipeline_program(b.schedule, {&chunk, &chunk}, timing.spans, send_bytes, 2);
  return b;
}

bool is_weight_gradient(const model::Op& op) {
  return op.kind == model::OpKind::kGemm && model::gemm_role_of(op.name) == model::GemmRole::kWeightGradient;
}

}  // namespace

TEST_CASE("a whole pipelined step holds every chunk's ops once per micro-batch on its stage, and a send per crossing",
          "[model][pipeline]") {
  const model::LayerGraph chunk = chunk_program();
  const double bytes = 2048.0 * 4096 * 2 / 2;
  const Built b = build(PipelineScheduleKind::kOneFOneB, chunk, bytes);
  const model::LayerGraph& g = b.program.graph;
  // 2 chunks x 2 micro-batches of the program, and per micro-batch one activation sent on, one gradient sent back.
  CHECK(g.size() == 2 * 2 * chunk.size() + 2 * 2);
  int sends = 0;
  for (model::OpId id = 0; id < g.size(); ++id) {
    const model::Op& op = g.op(id);
    if (op.group != model::CommGroup::kPipeline) {
      CHECK((op.pipeline_stage == 0 || op.pipeline_stage == 1));
      CHECK(op.receiving_stage == -1);
      continue;
    }
    ++sends;
    CHECK(op.tensor_bytes == bytes);
    CHECK(op.group_stride == 2);
    // Forward sends go from stage 0 to 1, gradients back; each runs on both stages.
    const bool forward = op.stage == model::OpStage::kForward;
    CHECK(op.pipeline_stage == (forward ? 0 : 1));
    CHECK(op.receiving_stage == (forward ? 1 : 0));
    CHECK(model::runs_on_stage(op, 0));
    CHECK(model::runs_on_stage(op, 1));
  }
  CHECK(sends == 4);
  // Each step's ops are a run of the program: a forward the chunk's forward ops, a backward the rest.
  size_t forward_ops = 0;
  for (const model::Op& op : chunk.ops()) forward_ops += op.stage == model::OpStage::kForward ? 1 : 0;
  for (int stage = 0; stage < 2; ++stage) {
    REQUIRE(b.program.passes[stage].size() == b.schedule.steps[stage].size());
    for (size_t i = 0; i < b.schedule.steps[stage].size(); ++i) {
      const auto [first, last] = b.program.passes[stage][i];
      const bool forward = b.schedule.steps[stage][i].pass == PipelinePass::kForward;
      CHECK(last - first == (forward ? forward_ops : chunk.size() - forward_ops));
      for (model::OpId id = first; id < last; ++id) CHECK(g.op(id).pipeline_stage == stage);
    }
  }
  // Stage 1's forward of micro-batch 0 starts with ops that read the send of stage 0's output.
  const auto [first, last] = b.program.passes[1][0];
  const model::Op& send = g.op(first - 1);
  REQUIRE(send.group == model::CommGroup::kPipeline);
  bool reads_send = false;
  for (const model::Dep& dep : g.op(first).deps) reads_send = reads_send || (dep.op == first - 1 && dep.data);
  CHECK(reads_send);
}

TEST_CASE("a zero-bubble step runs each backward's weight-gradient GEMMs in a pass of their own", "[model][pipeline]") {
  const model::LayerGraph chunk = chunk_program();
  int weight_gemms = 0;
  for (const model::Op& op : chunk.ops()) weight_gemms += is_weight_gradient(op) ? 1 : 0;
  REQUIRE(weight_gemms > 0);
  const Built b = build(PipelineScheduleKind::kZeroBubbleH1, chunk, 1.0);
  for (int stage = 0; stage < 2; ++stage) {
    for (size_t i = 0; i < b.schedule.steps[stage].size(); ++i) {
      const PipelinePass pass = b.schedule.steps[stage][i].pass;
      const auto [first, last] = b.program.passes[stage][i];
      int gemms = 0;
      for (model::OpId id = first; id < last; ++id) gemms += is_weight_gradient(b.program.graph.op(id)) ? 1 : 0;
      CHECK(gemms == (pass == PipelinePass::kWeightGradient ? weight_gemms : 0));
    }
  }
  // The same ops as 1F1B's, split differently.
  CHECK(b.program.graph.size() == build(PipelineScheduleKind::kOneFOneB, chunk, 1.0).program.graph.size());
}

TEST_CASE("a whole pipelined step casts FSDP's fp8 shards with their gathers, in the step's first forward only",
          "[model][pipeline][fp8]") {
  const model::Scenario s = model::parse_scenario(
      "name: pp\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nworkload: {phase: train, batch: 1, seq_len: 2048, "
      "layers: 4, dtype: fp8, fp8_recipe: tensorwise}\nparallelism: {tp: 2, dp: 2}\n"
      "fsdp: {fp8_all_gather: true, reshard_after_forward: false}\nvariants: [{name: sp, tp_mode: sp}]\n",
      "pp.yaml");
  model::Workload w = model::chunk_workload(s.workload, model::ModelChunk{2, false, false});
  w.optimizer = false;
  const model::LayerGraph chunk = model::build_pass_graph(s.arch, w, model::primary_pass(w), 2, s.variants.front());
  const Built b = build(PipelineScheduleKind::kOneFOneB, chunk, 2048.0 * 4096);
  const model::LayerGraph& g = b.program.graph;
  int casts = 0, gathers = 0;
  for (model::OpId id = 0; id < g.size(); ++id) {
    const model::Op& op = g.op(id);
    const bool cast = op.name.find("fsdp.fp8_cast") != std::string::npos;
    casts += cast ? 1 : 0;
    if (cast) CHECK(op.name.find(".mb0.") != std::string::npos);
    if (op.group != model::CommGroup::kData || op.collective != model::CollectiveKind::kAllGather) continue;
    ++gathers;
    // Each gather reads its cast, the op issued before it.
    bool reads_cast = false;
    for (const model::Dep& dep : op.deps) {
      reads_cast = reads_cast || (dep.data && g.op(dep.op).name.find("fsdp.fp8_cast") != std::string::npos);
    }
    CHECK(reads_cast);
  }
  // 2 layers of each of the 2 chunks, once per step.
  CHECK(casts == 4);
  CHECK(gathers == 4);
}

TEST_CASE(
    "a pipeline stage's passes under Transformer Engine's kernels read the fp8 weights its first micro-batch cast",
    "[model][pipeline][fp8]") {
  const model::Scenario s = model::parse_scenario(
      "name: pp\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nimplementation: {fp8_kernels: transformer_engine}\n"
      "workload: {phase: train, batch: 1, seq_len: 2048, layers: 4, dtype: fp8, fp8_recipe: delayed}\n"
      "parallelism: {tp: 2, pp: 2}\nvariants: [{name: sp, tp_mode: sp}]\n",
      "pp.yaml");
  const model::ChunkWorkloads workloads = model::chunk_workloads(s.workload, model::ModelChunk{2, false, false});
  CHECK(workloads.microbatch.fp8_weights_cached);
  const auto weight_casts = [&](const model::Workload& w) {
    const model::LayerGraph g = model::build_pass_graph(s.arch, w, model::primary_pass(w), 2, s.variants.front());
    int casts = 0, activation_casts = 0;
    for (const model::Op& op : g.ops()) {
      if (!op.quantisation) continue;
      (op.name.find(".w.") != std::string::npos ? casts : activation_casts) += 1;
    }
    CHECK(activation_casts > 0);
    return casts;
  };
  CHECK(weight_casts(workloads.microbatch) == 0);
  // The same pass as a step's first micro-batch casts each of the 2 layers' 4 linears' weights once.
  model::Workload first = workloads.microbatch;
  first.fp8_weights_cached = false;
  CHECK(weight_casts(first) == 2 * 4);
}
