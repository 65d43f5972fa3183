// Pipeline-parallel training steps (parallelism.pp > 1): each stage's passes are its chunk's program, the
// stages hold the model once, 1F1B's stages hold p-s micro-batches, the sends take NVLink or the NIC as the
// stages are placed, and the schedules shorten the step as their bubbles say.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "base/input_error.hpp"
#include "model/graph/graph_builder.hpp"
#include "model/memory/activation_memory.hpp"
#include "model/memory/memory_footprint.hpp"
#include "model/memory/parameter_count.hpp"
#include "model/pipeline/pipeline_spec.hpp"
#include "model/scenario.hpp"
#include "sim/cost/collective_time.hpp"
#include "sim/cost/fabric.hpp"
#include "sim/report/trace_export.hpp"
#include "sim/run/scenario_run.hpp"
#include "test_support.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

// Llama-3.1-8B's layers with a 2048-token vocabulary: ends too light to unbalance the stages.
const std::string kLightEnds =
    "{hidden_size: 4096, intermediate_size: 14336, num_attention_heads: 32, num_key_value_heads: 8, "
    "num_hidden_layers: 32, vocab_size: 2048}";

// Llama-3.1-8B's 32 layers over tp=2 x pp=4 on one 8-GPU NVSwitch node: 8 layers per stage.
std::string job(const std::string& pipeline, const std::string& hardware = "{gpu: h100-sxm}", int tp = 2,
                const std::string& model = "llama-3.1-8b") {
  return "name: pp\nmodel: " + model + "\nhardware: " + hardware +
         "\nworkload: {phase: train, batch: 1, seq_len: 2048, microbatches: 8}\nparallelism: {tp: " +
         std::to_string(tp) + ", pp: 4}\n" + pipeline + "variants: [{name: sp, tp_mode: sp}]\n";
}

sim::ScenarioRun run(const std::string& text) {
  return sim::run_scenario(model::parse_scenario(text, "pp.yaml"));
}

// The middle chunk's program (8 layers, neither end) simulated alone on its TP group.
struct Middle {
  double forward_s = 0;
  double backward_s = 0;
  model::SavedActivations saved;
};

// At `clock`: the clock the pipeline's step ran its programs at.
Middle simulate_middle(const model::Scenario& s, double clock) {
  model::Workload w = model::chunk_workload(s.workload, model::ModelChunk{8, false, false});
  w.optimizer = false;
  const model::LayerGraph graph =
      model::build_pass_graph(s.arch, w, model::primary_pass(w), s.parallelism.tp, s.variants.front());
  const sim::CostModel cost = test::h100_cost().at_clock(clock);
  sim::EngineOptions options = sim::launch_options(cost.profile(), false);
  options.window_clock = false;
  const sim::Timeline timeline = sim::simulate(graph, cost, options);
  Middle m;
  for (const sim::OpSpan& span : timeline.spans) {
    if (graph.op(span.op).stage == model::OpStage::kForward) m.forward_s = std::max(m.forward_s, span.end_s);
  }
  m.backward_s = timeline.makespan_s - m.forward_s;
  m.saved = model::saved_activations(graph);
  return m;
}

}  // namespace

TEST_CASE("a pipeline stage's passes are its chunk's program simulated alone, and 1F1B runs m+p-1 of them",
          "[sim][pipeline]") {
  const sim::ScenarioRun r = run(job("", "{gpu: h100-sxm}", 2, kLightEnds));
  const sim::PipelineRun& p = *r.variants.front().pipeline;
  const Middle middle = simulate_middle(r.scenario, p.clock_ratio);
  REQUIRE(p.stages.size() == 4);
  CHECK(p.programs_simulated == 3);  // first, middle (stages 1 and 2), last
  for (const int stage : {1, 2}) {
    CHECK(p.stages[stage].forward_s == Approx(middle.forward_s).epsilon(1e-12));
    CHECK(p.stages[stage].backward_s == Approx(middle.backward_s).epsilon(1e-12));
  }
  // The ends add the embedding and the head: never shorter than a middle stage.
  CHECK(p.stages[0].forward_s > middle.forward_s);
  CHECK(p.stages[3].backward_s > middle.backward_s);
  // Every stage runs m forward-backward pairs, and the pipeline fills and drains over p-1 more.
  const double pair = middle.forward_s + middle.backward_s;
  CHECK(p.pipeline_s >= (8 + 4 - 1) * pair);
  // Sends over NVLink take microseconds against passes of milliseconds, and the ends are light: the bubble
  // is 1F1B's (p-1)/(m+p-1).
  CHECK(p.bubble_fraction == Approx(3.0 / 11).margin(0.01));
  CHECK(r.variants.front().metrics.time_s == Approx(p.stages[0].end_s));
  CHECK(r.variants.front().tokens_per_s == Approx(8 * 2048 / r.variants.front().metrics.time_s));
}

TEST_CASE("the stages together hold the model's parameters, gradients and optimizer state once", "[sim][pipeline]") {
  const sim::ScenarioRun r = run(job(""));
  const model::Scenario& s = r.scenario;
  model::Workload whole = s.workload;
  whole.microbatches = 1;
  const model::MemoryFootprint one = model::memory_footprint(s.arch, whole, s.variants.front(), s.parallelism.tp);
  double weights = 0, gradients = 0, state = 0;
  for (const sim::StageRun& stage : r.variants.front().pipeline->stages) {
    weights += stage.memory.weights_bytes;
    gradients += stage.memory.gradient_bytes;
    state += stage.memory.optimizer_bytes;
  }
  REQUIRE_FALSE(s.arch.tied_embeddings);  // a tied head would be a second copy on the last stage
  CHECK(weights == Approx(one.weights_bytes).epsilon(1e-12));
  CHECK(gradients == Approx(one.gradient_bytes).epsilon(1e-12));
  CHECK(state == Approx(one.optimizer_bytes).epsilon(1e-12));
}

TEST_CASE("1F1B's stage s holds p-s micro-batches' saved activations, GPipe's every micro-batch", "[sim][pipeline]") {
  const sim::ScenarioRun one = run(job(""));
  const sim::PipelineRun& p = *one.variants.front().pipeline;
  const Middle middle = simulate_middle(one.scenario, p.clock_ratio);
  CHECK(p.stages[1].peak_in_flight == 3);
  CHECK(p.stages[2].peak_in_flight == 2);
  CHECK(p.stages[1].memory.activation_bytes - p.stages[2].memory.activation_bytes ==
        Approx(middle.saved.forward_bytes).epsilon(1e-12));
  const sim::ScenarioRun gpipe = run(job("pipeline: {schedule: gpipe}\n"));
  const sim::PipelineRun& g = *gpipe.variants.front().pipeline;
  CHECK(g.stages[2].peak_in_flight == 8);
  CHECK(g.stages[2].memory.activation_bytes - p.stages[2].memory.activation_bytes ==
        Approx(6 * middle.saved.forward_bytes).epsilon(1e-12));
}

TEST_CASE("FSDP under a pipeline holds each stage's whole gradient in the reduce dtype until its last backward",
          "[sim][pipeline]") {
  // PyTorch's pipeline stages reduce FSDP's gradients in the last micro-batch's backward only: until then each stage
  // holds its chunk's gradient unsharded, in the reduce dtype. DDP accumulates into its whole gradients anyway.
  const auto fsdp_job = [](int microbatches, const std::string& data_parallel) {
    return run(
        "name: pp\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm, topology: ib-rail, nodes: 2}\n"
        "workload: {phase: train, batch: 1, seq_len: 2048, microbatches: " +
        std::to_string(microbatches) + "}\nparallelism: {tp: 2, pp: 4, dp: 2}\n" + data_parallel +
        "variants: [{name: sp, tp_mode: sp}]\n");
  };
  for (const auto& [reduce, bytes] : std::vector<std::pair<std::string, double>>{{"fp32", 4.0}, {"bf16", 2.0}}) {
    CAPTURE(reduce);
    const std::string fsdp = "fsdp: {reshard_after_forward: false, reduce_dtype: " + reduce + "}\n";
    const sim::ScenarioRun eight = fsdp_job(8, fsdp);
    const model::Scenario& s = eight.scenario;
    // Stage 1 holds layers 8-15, a middle chunk: the FSDP footprint of its layers alone, without the accumulation,
    // and what one micro-batch's forward through it saves.
    const model::Workload chunk = model::chunk_workload(s.workload, model::ModelChunk{8, false, false});
    const double saved = model::training_saved_activations(s.arch, chunk, s.variants.front(), 2).forward_bytes;
    const model::MemoryFootprint sharded = model::memory_footprint(s.arch, chunk, s.variants.front(), 2);
    const double accumulated =
        bytes * model::layer_parameters_per_rank(s.arch, model::shard_for_tp(s.arch, 2), model::LayerRange{8, 8});
    for (const int m : {8, 3}) {
      CAPTURE(m);
      const sim::ScenarioRun with = fsdp_job(m, fsdp);
      const sim::ScenarioRun ddp = fsdp_job(m, "ddp: {}\n");
      const model::MemoryFootprint& stage = with.variants.front().pipeline->stages[1].memory;
      CHECK(stage.gradient_bytes - sharded.gradient_bytes == Approx(accumulated).epsilon(1e-9));
      // m = 8: a forward follows the first backward and stage 1 holds its 3 micro-batches again beside the
      // gradient; m = 3: its three forwards run first, and the gradient appears once one micro-batch is freed.
      const double fewer = m == 3 ? saved : 0.0;
      CHECK(stage.activation_bytes ==
            Approx(ddp.variants.front().pipeline->stages[1].memory.activation_bytes - fewer).epsilon(1e-9));
    }
  }
}

TEST_CASE("sends between stages take NVLink inside a node and the NIC across nodes, at their closed forms",
          "[sim][pipeline]") {
  // tp=4: stages 0 and 1 on node 0, stages 2 and 3 on node 1.
  const sim::ScenarioRun r = run(job("", "{gpu: h100-sxm, topology: ib-rail, nodes: 2}", 4));
  const sim::PipelineRun& p = *r.variants.front().pipeline;
  const double bytes = 2048.0 * 4096 * 2 / 4;  // the layer output's 1/tp shard, bf16
  CHECK(p.activation_bytes == bytes);
  const sim::CostProfile& profile = r.profile;
  const double nvlink = profile.nccl_call_latency_s + profile.nccl.step_latency_s +
                        bytes / (r.fabric.port_Bps * profile.nccl.link_efficiency);
  const double nic = profile.nccl_call_latency_s + profile.network->step_latency_s +
                     bytes / (r.fabric.nic_Bps * profile.network->link_efficiency);
  REQUIRE(p.hop_s.size() == 3);
  CHECK(p.hop_crosses_nodes == std::vector<bool>{false, true, false});
  CHECK(p.hop_s[0] == Approx(nvlink));
  CHECK(p.hop_s[1] == Approx(nic));
  CHECK(p.hop_s[2] == Approx(nvlink));
  // On one node (every send over NVLink), GPipe's critical path crosses every boundary at least once each way, and
  // with equal stages would hold 2 (m + p - 2) sends, each stage posting a receive only once done with its previous
  // pass (model/pipeline_schedule_test.cpp); the ends' unequal passes leave it between the two.
  const sim::ScenarioRun g = run(job("pipeline: {schedule: gpipe}\n", "{gpu: h100-sxm}", 2, kLightEnds));
  const sim::PipelineRun& q = *g.variants.front().pipeline;
  CHECK(q.send_exposed_s > 2 * (4 - 1) * q.hop_s[0]);
  CHECK(q.send_exposed_s <= 2 * (8 + 4 - 2) * q.hop_s[0] * (1 + 1e-9));
}

TEST_CASE("zero-bubble and interleaved schedules shorten the step as their bubbles say", "[sim][pipeline]") {
  // One clock for the three schedules (the limiter's window would give each step its own), so that the passes' costs
  // are the same in each.
  const std::string fixed = test::h100_fixed_clock_calibration();
  const sim::ScenarioRun one = run(job(fixed, "{gpu: h100-sxm}", 2, kLightEnds));
  const sim::ScenarioRun zb = run(job(fixed + "pipeline: {schedule: zb-h1}\n", "{gpu: h100-sxm}", 2, kLightEnds));
  const sim::ScenarioRun inter =
      run(job(fixed + "pipeline: {schedule: interleaved, virtual_stages: 2}\n", "{gpu: h100-sxm}", 2, kLightEnds));
  const sim::PipelineRun& p = *one.variants.front().pipeline;
  // ZB-H1 saves 2(p-1) weight-gradient passes of the step (Qi et al.; the weight gradient is shorter than the
  // forward here). But split off, the input gradient's pass loses the weight-gradient GEMMs that hid its
  // communication: each of the m+p-1 passes on the critical path pays what the split adds to a backward. The
  // sends and the ends make it inexact, by a few percent.
  const sim::PipelineRun& z = *zb.variants.front().pipeline;
  const double split_cost = z.stages[1].backward_s - p.stages[1].backward_s;
  CHECK(split_cost > 0);
  const double saved = one.variants.front().metrics.time_s - zb.variants.front().metrics.time_s;
  CHECK(z.stages[1].weight_gradient_s < z.stages[1].forward_s);
  CHECK(saved == Approx(2 * 3 * z.stages[1].weight_gradient_s - (8 + 4 - 1) * split_cost).epsilon(0.05));
  // Interleaving over 2 chunks per stage: bubble (p-1)/(v·m+p-1) = 3/19 instead of 3/11, the sends on the critical
  // path (twice as many as without interleaving, each paying NCCL's 21.6 us device time per call) adding to it.
  const sim::PipelineRun& i = *inter.variants.front().pipeline;
  CHECK(i.bubble_fraction == Approx(3.0 / 19).margin(0.015));
  CHECK(inter.variants.front().metrics.time_s < one.variants.front().metrics.time_s);
}

TEST_CASE("ZB-V folds the model into a V: stage 0 holds the first and last chunks, the bottom sends nothing",
          "[sim][pipeline]") {
  // tp=4 on two nodes: stages 0 and 1 on node 0, 2 and 3 on node 1; 8 chunks of 4 layers.
  const std::string hardware = "{gpu: h100-sxm, topology: ib-rail, nodes: 2}";
  const sim::ScenarioRun v = run(job("pipeline: {schedule: zb-v, virtual_stages: 2}\n", hardware, 4, kLightEnds));
  const sim::PipelineRun& p = *v.variants.front().pipeline;
  // Chunks 0..7 sit on stages 0 1 2 3 3 2 1 0: the boundaries cross the node between stages 1 and 2 twice, and
  // chunks 3 and 4 share stage 3, so that hop costs nothing.
  CHECK(p.hop_crosses_nodes == std::vector<bool>{false, true, false, false, false, true, false});
  REQUIRE(p.hop_s.size() == 7);
  CHECK(p.hop_s[3] == 0);
  CHECK(p.hop_s[0] == p.hop_s[2]);
  CHECK(p.hop_s[1] > p.hop_s[0]);
  // Every stage runs 8 layers; stage 0 holds the embedding's chunk and the head's, so its passes are the longest.
  for (const sim::StageRun& stage : p.stages) CHECK(stage.layers == 8);
  CHECK(p.stages[0].forward_s > p.stages[1].forward_s);
  // At most 2p chunks' activations held on any stage, and against interleaving over the same chunks the V
  // (its weight gradients filling the bubble) leaves less of it.
  for (const sim::StageRun& stage : p.stages) CHECK(stage.peak_in_flight <= 8);
  const std::string interleaved =
      job("pipeline: {schedule: interleaved, virtual_stages: 2}\n", hardware, 4, kLightEnds);
  const sim::ScenarioRun inter = run(interleaved);
  CHECK(p.bubble_fraction < inter.variants.front().pipeline->bubble_fraction);
  // Without TP communication for the split-off input gradients to expose, that shortens the step; under sp the
  // exposed communication takes the gain back (within 2% of interleaving: the V's sends, two per chunk boundary and
  // each paying NCCL's device time per call, against interleaving's).
  const auto without_tp_comm = [](std::string text) {
    return text.replace(text.find("tp_mode: sp"), 11, "tp_mode: nocomm");
  };
  const sim::ScenarioRun v_plain =
      run(without_tp_comm(job("pipeline: {schedule: zb-v, virtual_stages: 2}\n", hardware, 4, kLightEnds)));
  const sim::ScenarioRun inter_plain = run(without_tp_comm(interleaved));
  CHECK(v_plain.variants.front().metrics.time_s < 0.95 * inter_plain.variants.front().metrics.time_s);
  CHECK(v.variants.front().metrics.time_s == Approx(inter.variants.front().metrics.time_s).epsilon(0.02));
}

TEST_CASE("a pipeline of one stage is the training step as before", "[sim][pipeline]") {
  const std::string plain =
      "name: pp\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nworkload: {phase: train, batch: "
      "1, seq_len: 2048, layers: 2, microbatches: 2}\nparallelism: {tp: 8";
  const std::string variants = "}\nvariants: [{name: sp, tp_mode: sp}]\n";
  const sim::ScenarioRun without = run(plain + variants);
  const sim::ScenarioRun with = run(plain + ", pp: 1" + variants);
  CHECK_FALSE(with.variants.front().pipeline);
  CHECK(with.variants.front().metrics.time_s == without.variants.front().metrics.time_s);
}

TEST_CASE("a job that does not fit the fabric, or leaves nodes empty, is refused with the nodes it needs",
          "[sim][pipeline]") {
  // 2 x 4 = 8 GPUs fit one node; 8 x 4 = 32 do not.
  CHECK_THROWS_WITH(run(job("", "{gpu: h100-sxm}", 8)),
                    Contains("pp.yaml:3:") && Contains("give topology: ib-rail with nodes: 4"));
  CHECK_THROWS_WITH(run(job("", "{gpu: h100-sxm, topology: ib-rail, nodes: 3}", 4)),
                    Contains("fill 2 of the 3 nodes") && Contains("hardware.nodes: 2"));
  // A TP group of 16 fills two whole nodes; one of 6 would straddle two.
  const sim::GpuSpec h100 = test::gpu_preset("h100-sxm");
  const sim::Fabric three = sim::resolve_fabric(sim::FabricRequest{"ib-rail", 3}, h100);
  CHECK_THAT(sim::job_placement_problem(three, 6, 4, 1, "h100-sxm"),
             Contains("would straddle two ib-rail nodes of 8 GPUs"));
  const sim::Fabric eight = sim::resolve_fabric(sim::FabricRequest{"ib-rail", 8}, h100);
  CHECK(sim::job_placement_problem(eight, 16, 4, 1, "h100-sxm").empty());
}

TEST_CASE("the trace shows the schedule: a thread per stage with its passes and its optimizer", "[sim][pipeline]") {
  const sim::ScenarioRun r = run(job("pipeline: {schedule: zb-h1}\n"));
  const nlohmann::json trace = nlohmann::json::parse(sim::chrome_trace_json(r));
  std::map<int, int> passes, optimizers;  // per stage (thread)
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (!e.contains("cat") || e["cat"] != "pipeline") continue;
    (e["name"] == "optimizer" ? optimizers : passes)[e["tid"].get<int>()] += 1;
  }
  REQUIRE(passes.size() == 4);
  for (int stage = 0; stage < 4; ++stage) {
    CHECK(passes[stage] == 3 * 8);  // F, B and W of each micro-batch
    CHECK(optimizers[stage] == 1);
  }
}

TEST_CASE("an uneven split runs the layers it gives: moving layers off the LM head's stage shortens the step",
          "[sim][pipeline]") {
  // Llama-3.1-8B at 2048 tokens: the 128k-token LM head and loss weigh about two layers.
  const sim::ScenarioRun even = run(job(""));
  const sim::ScenarioRun uneven = run(job("pipeline: {chunk_layers: [9, 9, 8, 6]}\n"));
  const sim::PipelineRun& e = *even.variants.front().pipeline;
  const sim::PipelineRun& u = *uneven.variants.front().pipeline;
  CHECK(u.programs_simulated == 4);
  CHECK(u.stages[2].forward_s == Approx(e.stages[1].forward_s).epsilon(1e-12));  // 8 layers, no ends, in both
  CHECK(u.stages[1].forward_s > e.stages[1].forward_s);
  CHECK(u.stages[3].backward_s < e.stages[3].backward_s);
  double even_weights = 0, uneven_weights = 0;
  for (size_t s = 0; s < 4; ++s) {
    even_weights += e.stages[s].memory.weights_bytes;
    uneven_weights += u.stages[s].memory.weights_bytes;
  }
  CHECK(uneven_weights == Approx(even_weights).epsilon(1e-12));
  CHECK(uneven.variants.front().metrics.time_s < even.variants.front().metrics.time_s);
}

TEST_CASE("a hybrid stack's chunks run their layers as the model numbers them, sharing a simulation when alike",
          "[sim][pipeline]") {
  // Qwen3-Next's first 16 layers (full attention in every 4th), expert TP over tp 2, 4 stages.
  const auto hybrid = [](const std::string& pipeline) {
    return run(
        "name: pp\nmodel: qwen3-next-80b-a3b\nhardware: {gpu: h200-sxm}\n"
        "workload: {phase: train, batch: 1, seq_len: 2048, layers: 16, microbatches: 8}\n"
        "parallelism: {tp: 2, pp: 4, ep: 1}\n" +
        pipeline + "variants: [{name: sp, tp_mode: sp}]\n");
  };
  // Chunks of 4 layers: three linear-attention layers and a full-attention one in each, like every other.
  CHECK(hybrid("").variants.front().pipeline->programs_simulated == 3);
  // Chunks of 2: layers 0-1 (both linear), 2-3 (linear, full), 4-5, ...: two kinds of middle chunk.
  const sim::ScenarioRun interleaved = hybrid("pipeline: {schedule: interleaved, virtual_stages: 2}\n");
  CHECK(interleaved.variants.front().pipeline->programs_simulated == 4);
  CHECK(interleaved.variants.front().metrics.time_s > 0);
}

TEST_CASE("experts split over a stage's replicas run under a pipeline, each stage's all-to-alls over its own GPUs",
          "[sim][pipeline]") {
  // DeepSeek-V2-Lite over 2 stages of 8 replicas (one H100 node each), its 64 experts over EP 8 inside each stage.
  const std::string text =
      "name: pp\nmodel: deepseek-v2-lite\nhardware: {gpu: h100-sxm, topology: ib-rail, nodes: 2}\n"
      "workload: {phase: train, batch: 1, seq_len: 4096, microbatches: 4}\n"
      "parallelism: {tp: 1, dp: 8, pp: 2, ep: 8ORDER}\npipeline: {chunk_layers: [13, 14]}\n"
      "variants: [{name: tp, tp_mode: tp}]\n";
  std::string yaml = text;
  yaml.replace(yaml.find("ORDER"), 5, "");
  const sim::ScenarioRun r = run(yaml);
  const sim::PipelineRun& p = *r.variants.front().pipeline;
  REQUIRE(p.stages.size() == 2);
  // Stage 0 holds the embedding and the dense first layer, stage 1 the head: two programs.
  CHECK(p.programs_simulated == 4);  // each plain and synchronised over the replicas
  CHECK(sim::exposed_by_dimension(r.variants.front()).ep_s > 0);
  // The stage's replicas are 8 consecutive GPUs only with the stages outermost.
  std::string inner = text;
  inner.replace(inner.find("ORDER"), 5, ", order: [tp, pp, dp]");
  CHECK_THROWS_WITH(model::parse_scenario(inner, "pp.yaml"),
                    Contains("pp.yaml:5:") && Contains("needs parallelism.order [tp, dp, pp]"));
}

namespace {

// When stage `stage`'s last pass ends.
double passes_end(const sim::PipelineRun& p, size_t stage) {
  double end = 0;
  for (const model::PipelineSpan& span : p.spans[stage]) end = std::max(end, span.end_s);
  return end;
}

}  // namespace

TEST_CASE("every stage clips once the stages' gradient norms are summed: the updates start together after the slowest",
          "[sim][pipeline]") {
  const sim::ScenarioRun r = run(job(""));
  const sim::PipelineRun& p = *r.variants.front().pipeline;
  // One fp32 summed over the 4 stages' GPUs of a TP rank (2 apart inside the node): an NCCL call, microseconds.
  CHECK(p.grad_norm_sync_s > r.profile.nccl_call_latency_s);
  CHECK(p.grad_norm_sync_s < 50e-6);
  double norms = 0;
  for (size_t s = 0; s < p.stages.size(); ++s) {
    CHECK(p.stages[s].norm_s > 0);
    CHECK(p.stages[s].norm_s < p.stages[s].optimizer_s);
    norms = std::max(norms, passes_end(p, s) + p.stages[s].norm_s);
  }
  for (const sim::StageRun& stage : p.stages) {
    CHECK(stage.end_s == Approx(norms + p.grad_norm_sync_s + stage.optimizer_s - stage.norm_s).epsilon(1e-12));
  }
  // The step ends with the largest update (the LM head's stage), not the last stage to finish its passes plus its own.
  double step = 0;
  for (const sim::StageRun& stage : p.stages) step = std::max(step, stage.end_s);
  CHECK(r.variants.front().metrics.time_s == step);
  CHECK(p.tied_embedding_sync_s == 0);  // Llama-3.1-8B's LM head is its own matrix
}

TEST_CASE("tied embeddings on the first and last stage sum their gradients before those stages' norms, not under ZB-V",
          "[sim][pipeline]") {
  const std::string tied =
      "{hidden_size: 4096, intermediate_size: 14336, num_attention_heads: 32, num_key_value_heads: 8, "
      "num_hidden_layers: 32, vocab_size: 128256, tie_word_embeddings: true}";
  const sim::ScenarioRun r = run(job("", "{gpu: h100-sxm}", 2, tied));
  const sim::PipelineRun& p = *r.variants.front().pipeline;
  // The fp32 gradient of the embedding's half on each TP rank, all-reduced between GPU r of stage 0 and of stage 3
  // (6 apart, one node): a two-GPU ring moves it once through the port, at most at NVLink's rate.
  const double bytes = 4.0 * (128256 / 2) * 4096;
  CHECK(p.tied_embedding_sync_s > bytes / r.gpu.nvlink_Bps);
  CHECK(p.tied_embedding_sync_s < 2 * bytes / r.gpu.nvlink_Bps + 1e-3);
  const double both = std::max(passes_end(p, 0), passes_end(p, 3)) + p.tied_embedding_sync_s;
  for (const size_t s : {size_t{0}, size_t{3}}) {
    CHECK(p.stages[s].end_s >= both + p.stages[s].optimizer_s - 1e-12);
  }
  const sim::ScenarioRun v = run(job("pipeline: {schedule: zb-v, virtual_stages: 2}\n", "{gpu: h100-sxm}", 2, tied));
  CHECK(v.variants.front().pipeline->tied_embedding_sync_s == 0);  // both ends on stage 0
}
