// Sweep expansion: cartesian order, overrides of every kind of axis, located errors.
#include <catch2/catch.hpp>

#include "base/input_error.hpp"
#include "input/sweep.hpp"

using namespace tpsim;
using Catch::Matchers::Contains;

namespace {

const std::string kBase = R"(model: llama-3.1-8b
hardware: {gpu: h100-sxm}
workload: {phase: forward, batch: 1, seq_len: 1024, layers: 2}
parallelism: {tp: 8}
variants:
  - {name: sp, tp_mode: sp}
  - {name: fast, tp_mode: async, chunks: 8}
sweep:
  workload.batch: [1, 4]
  variants.fast.chunks: [8, 16, 32]
)";

}  // namespace

TEST_CASE("a sweep is the cartesian product of its axes, the last axis varying fastest") {
  const auto points = model::expand_sweep(model::parse_scenario(kBase, "s.yaml"));
  REQUIRE(points.size() == 2 * 3);
  CHECK(points[0].values ==
        std::vector<std::pair<std::string, std::string>>{{"workload.batch", "1"}, {"variants.fast.chunks", "8"}});
  CHECK(points[1].scenario.variants[1].chunks == 16);
  CHECK(points[3].scenario.workload.batch == 4);
  CHECK(points[5].scenario.variants[1].chunks == 32);
  for (const auto& p : points) CHECK_FALSE(p.scenario.has_sweep);
}

TEST_CASE("a scenario without a sweep is its own single point") {
  const std::string plain = kBase.substr(0, kBase.find("sweep:"));
  const auto points = model::expand_sweep(model::parse_scenario(plain, "s.yaml"));
  REQUIRE(points.size() == 1);
  CHECK(points[0].values.empty());
}

TEST_CASE("a bad sweep axis or value fails at its location with what is valid") {
  const std::string bad_path = kBase + "  workload.bach: [1]\n";
  CHECK_THROWS_WITH(model::expand_sweep(model::parse_scenario(bad_path, "s.yaml")),
                    Contains("s.yaml:11:3:") && Contains("unknown key 'bach'"));
  const std::string bad_variant = kBase + "  variants.slow.chunks: [1]\n";
  CHECK_THROWS_WITH(model::expand_sweep(model::parse_scenario(bad_variant, "s.yaml")),
                    Contains("s.yaml:11:3:") && Contains("no variant named 'slow'"));
  const std::string bad_value = kBase + "  parallelism.tp: [8, 3]\n";
  CHECK_THROWS_WITH(model::expand_sweep(model::parse_scenario(bad_value, "s.yaml")),
                    Contains("s.yaml:11:23:") && Contains("tp=3"));
  const std::string empty = kBase + "  hardware.gpu: []\n";
  CHECK_THROWS_WITH(model::expand_sweep(model::parse_scenario(empty, "s.yaml")), Contains("non-empty list"));
  const std::string nonsense = kBase + "  colour: [red]\n";
  CHECK_THROWS_WITH(model::expand_sweep(model::parse_scenario(nonsense, "s.yaml")),
                    Contains("not a valid path; valid: workload.<key>"));
}

TEST_CASE("an implementation key sweeps over the scenario's preset, its own keys or the idealised layer") {
  const std::string plain = kBase.substr(0, kBase.find("sweep:"));
  const std::string axis = "sweep:\n  implementation.async_tp: [pipeline, tile_fused]\n";
  // No block: the idealised layer with the swept key.
  const auto idealised = model::expand_sweep(model::parse_scenario(plain + axis, "s.yaml"));
  REQUIRE(idealised.size() == 2);
  CHECK(idealised[1].scenario.workload.implementation.async_tp == model::AsyncTpKernel::kTileFused);
  CHECK(idealised[1].scenario.workload.implementation.name == "custom");
  // A preset named alone: its keys stay, the swept one replaces its value.
  const std::string preset = plain + "implementation: torchtitan-2024\n" + axis;
  const auto over_preset = model::expand_sweep(model::parse_scenario(preset, "s.yaml"));
  REQUIRE(over_preset.size() == 2);
  const model::Implementation& i = over_preset[1].scenario.workload.implementation;
  CHECK(i.async_tp == model::AsyncTpKernel::kTileFused);
  CHECK(i.name == "torchtitan-2024+custom");
  CHECK(i.sp_layout_copies);
  const std::string bad = plain + "sweep:\n  implementation.kernel: [fa2]\n";
  CHECK_THROWS_WITH(model::expand_sweep(model::parse_scenario(bad, "s.yaml")),
                    Contains("s.yaml:9:3:") && Contains("unknown key 'kernel' in implementation"));
}

TEST_CASE("a pipeline axis sweeps whole sections, so a schedule comes with its virtual stages and its split") {
  const std::string job = R"(model: llama-3.1-8b
hardware: {gpu: h100-sxm, topology: ib-rail, nodes: 2}
workload: {phase: train, batch: 1, seq_len: 1024, layers: 8, microbatches: 4}
parallelism: {tp: 8, pp: 2}
variants: [{name: sp, tp_mode: sp}]
sweep:
  pipeline: [{schedule: 1f1b}, {schedule: zb-v, virtual_stages: 2, chunk_layers: [1, 3, 3, 1]}]
)";
  const auto points = model::expand_sweep(model::parse_scenario(job, "s.yaml"));
  REQUIRE(points.size() == 2);
  CHECK(points[0].scenario.pipeline.schedule == model::PipelineScheduleKind::kOneFOneB);
  CHECK(points[0].scenario.pipeline.virtual_stages == 1);
  CHECK(points[1].scenario.pipeline.schedule == model::PipelineScheduleKind::kZeroBubbleV);
  CHECK(points[1].scenario.pipeline.chunk_layers == std::vector<int64_t>{1, 3, 3, 1});
  CHECK(points[1].values.front().second == "{schedule: zb-v, virtual_stages: 2, chunk_layers: [1, 3, 3, 1]}");
  // A value that is not a section, or a section the schedule cannot run, is refused at the value.
  std::string scalar = job;
  scalar.replace(scalar.find("[{schedule: 1f1b}"), 17, "[1f1b");
  CHECK_THROWS_WITH(model::expand_sweep(model::parse_scenario(scalar, "s.yaml")),
                    Contains("s.yaml:7:14:") && Contains("each value is a pipeline section"));
  std::string one_chunk = job;
  one_chunk.replace(one_chunk.find("{schedule: zb-v, virtual_stages: 2, chunk_layers: [1, 3, 3, 1]}"), 63,
                    "{schedule: zb-v}");
  CHECK_THROWS_WITH(model::expand_sweep(model::parse_scenario(one_chunk, "s.yaml")),
                    Contains("s.yaml:7:32:") && Contains("virtual_stages must be 2"));
}
