// The pipeline section: model chunks and their programs, the send size, the schedule and virtual stages a
// scenario chooses or sweeps, and what a pipeline refuses, at its key.
#include <catch2/catch.hpp>

#include "base/input_error.hpp"
#include "input/sweep.hpp"
#include "model/pipeline/pipeline_spec.hpp"
#include "model/scenario.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

// Line 4 the workload, line 5 the parallelism, line 6 the pipeline.
std::string job(const std::string& workload, const std::string& parallelism, const std::string& pipeline,
                const std::string& variants = "[{name: sp, tp_mode: sp}]", const std::string& extra = "") {
  return "name: pp\nmodel: llama-3.1-8b\nhardware: {gpu: h100-sxm}\nworkload: " + workload +
         "\nparallelism: " + parallelism + "\n" + pipeline + "\nvariants: " + variants + "\n" + extra;
}

const std::string kTrain = "{phase: train, batch: 1, seq_len: 2048, microbatches: 8}";

}  // namespace

TEST_CASE(
    "a pipeline's chunks split the layers evenly or as given, the embedding on the first and the head on the last",
    "[model][pipeline]") {
  model::PipelineSpec spec;
  spec.virtual_stages = 2;
  const std::vector<model::ModelChunk> chunks = model::model_chunks(80, 4, spec);
  REQUIRE(chunks.size() == 8);
  for (size_t c = 0; c < chunks.size(); ++c) {
    CHECK(chunks[c].layers == 10);
    CHECK(chunks[c].embedding == (c == 0));
    CHECK(chunks[c].head == (c == 7));
    CHECK(chunks[c].first_layer == static_cast<int64_t>(10 * c));  // numbered in the model
  }
  model::Workload w;
  w.phase = model::Phase::kTrain;
  w.microbatches = 16;
  w.layers = 80;
  spec.chunk_layers = {11, 9, 10, 10, 10, 10, 9, 11};
  CHECK(model::model_chunks(80, 4, spec)[7] == model::ModelChunk{11, false, true, 80 - 11});
  CHECK(model::model_chunks(80, 4, spec)[1].layers == 9);
  const model::Workload one = model::chunk_workload(w, chunks[7]);
  CHECK(one.layers == 10);
  CHECK(one.first_layer == 70);
  CHECK(one.microbatches == 1);
  CHECK_FALSE(one.embedding);
  CHECK(one.head);
}

TEST_CASE("a stage sends each micro-batch's layer output, a 1/tp shard of it per GPU", "[model][pipeline]") {
  const model::Scenario s = model::parse_scenario(job(kTrain, "{tp: 2, pp: 4}", ""), "pp.yaml");
  // 2048 tokens x 4096 hidden x 2 bytes (bf16), over tp = 2.
  CHECK(model::stage_activation_bytes_per_rank(s.arch, s.workload, 2) == 2048.0 * 4096 * 2 / 2);
  CHECK(s.pipeline.schedule == model::PipelineScheduleKind::kOneFOneB);  // the default
  CHECK(s.pipeline.virtual_stages == 1);
  const model::Scenario z =
      model::parse_scenario(job(kTrain, "{tp: 2, pp: 4}", "pipeline: {schedule: zb-h1}"), "pp.yaml");
  CHECK(z.pipeline.schedule == model::PipelineScheduleKind::kZeroBubbleH1);
}

TEST_CASE("a pipeline refuses, at its key, what it cannot run", "[model][pipeline]") {
  const auto refuses = [](const std::string& text) {
    try {
      model::parse_scenario(text, "pp.yaml");
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(refuses(job("{phase: forward, batch: 1, seq_len: 2048}", "{tp: 2, pp: 4}", "")),
             Contains("pp.yaml:5:") && Contains("needs workload.phase train"));
  CHECK_THAT(refuses(job("{phase: train, batch: 1, seq_len: 2048, layers: 30, microbatches: 8}", "{tp: 2, pp: 4}", "")),
             Contains("30 layers do not split evenly into 4 stages") && Contains("a multiple of 4"));
  CHECK_THAT(refuses(job(kTrain, "{tp: 2, pp: 4}", "pipeline: {schedule: interleaved, virtual_stages: 3}")),
             Contains("pp.yaml:6:") && Contains("a multiple of 12"));
  CHECK_THAT(refuses(job(kTrain, "{tp: 8}", "pipeline: {schedule: 1f1b}")),
             Contains("pp.yaml:6:") && Contains("needs parallelism.pp of 2 or more"));
  CHECK_THAT(refuses(job(kTrain, "{tp: 2, pp: 4}", "pipeline: {schedule: dualpipe}")),
             Contains("pp.yaml:6:") && Contains("dualpipe (DeepSeek-V3's bidirectional pipeline") &&
                 Contains("is not modelled") && Contains("valid: gpipe, 1f1b, interleaved, zb-h1, zb-v"));
  CHECK_THAT(refuses(job(kTrain, "{tp: 2, pp: 4}", "pipeline: {schedule: 1f1b, virtual_stages: 2}")),
             Contains("1f1b runs one model chunk per stage"));
  CHECK_THAT(refuses(job("{phase: train, batch: 1, seq_len: 2048, microbatches: 6}", "{tp: 2, pp: 4}",
                         "pipeline: {schedule: interleaved, virtual_stages: 2}")),
             Contains("micro-batches must be a multiple of 4"));
  CHECK_THAT(refuses(job(kTrain, "{tp: 2, pp: 4}", "", "[{name: d, tp_mode: dtp, delta: 1}]")),
             Contains("pp.yaml:7:") && Contains("tp_mode dtp under parallelism.pp > 1 is not modelled yet"));
  CHECK_THAT(refuses(job(kTrain, "{tp: 2, pp: 4}", "pipeline: {stages: 4}")),
             Contains("pp.yaml:6:") && Contains("schedule, virtual_stages, chunk_layers"));
  CHECK_THAT(refuses(job(kTrain, "{tp: 2, pp: 4}", "pipeline: {chunk_layers: [8, 8, 16]}")),
             Contains("pp.yaml:6:26:") && Contains("a list of 4 layer counts"));
  CHECK_THAT(refuses(job(kTrain, "{tp: 2, pp: 4}", "pipeline: {chunk_layers: [8, 8, 8, 9]}")),
             Contains("add up to 33") && Contains("adding up to the 32 layers"));
  CHECK_THAT(refuses(job(kTrain, "{tp: 2, pp: 4}", "pipeline: {chunk_layers: [16, 8, 8, 0]}")),
             Contains("pp.yaml:6:37:") && Contains("chunk_layers entry"));
}

TEST_CASE("a sweep over pipeline keys sets them, creating the section where the scenario has none",
          "[model][pipeline]") {
  const std::string text = job(kTrain, "{tp: 2, pp: 4}", "", "[{name: sp, tp_mode: sp}]",
                               "sweep:\n  pipeline.schedule: [1f1b, interleaved]\n  pipeline.virtual_stages: [2]\n");
  const auto points = model::expand_sweep(model::parse_scenario(text, "pp.yaml"), true);
  REQUIRE(points.size() == 2);
  // 1f1b with 2 virtual stages is refused at that point; interleaved runs.
  CHECK_THAT(points[0].error, Contains("1f1b runs one model chunk per stage"));
  CHECK(points[1].error.empty());
  CHECK_THROWS_WITH(model::expand_sweep(model::parse_scenario(text, "pp.yaml")),
                    Contains("1f1b runs one model chunk per stage"));
  const std::string valid =
      job(kTrain, "{tp: 2, pp: 4}", "", "[{name: sp, tp_mode: sp}]", "sweep:\n  pipeline.schedule: [gpipe, zb-h1]\n");
  const auto schedules = model::expand_sweep(model::parse_scenario(valid, "pp.yaml"));
  REQUIRE(schedules.size() == 2);
  CHECK(schedules[1].scenario.pipeline.schedule == model::PipelineScheduleKind::kZeroBubbleH1);
}
