// Pipeline schedules: every pass run once, and the bubbles Narayanan et al. derive for 1F1B and its
// interleaved form, with GPipe's equal to 1F1B's.
#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

#include "model/input_error.hpp"
#include "model/pipeline_schedule.hpp"

using namespace tpsim;
using model::PipelineScheduleKind;

TEST_CASE("every stage runs each micro-batch's forward and backward once through each of its chunks",
          "[model][pipeline]") {
  for (const auto& [kind, v] :
       std::vector<std::pair<PipelineScheduleKind, int>>{{PipelineScheduleKind::kGpipe, 1},
                                                         {PipelineScheduleKind::kOneFOneB, 1},
                                                         {PipelineScheduleKind::kInterleaved, 3}}) {
    const model::PipelineSchedule s = model::make_pipeline_schedule(kind, 4, 8, v);
    REQUIRE(s.steps.size() == 4);
    for (const auto& stage : s.steps) {
      CHECK(stage.size() == static_cast<size_t>(2 * 8 * v));
      for (int mb = 0; mb < 8; ++mb) {
        for (int chunk = 0; chunk < v; ++chunk) {
          for (const auto pass : {model::PipelinePass::kForward, model::PipelinePass::kBackward}) {
            CHECK(std::count(stage.begin(), stage.end(), model::PipelineStep{pass, mb, chunk}) == 1);
          }
        }
      }
    }
  }
}

TEST_CASE("1F1B's first stage warms up with p-1 forwards and its last alternates from the start", "[model][pipeline]") {
  const model::PipelineSchedule s = model::make_pipeline_schedule(PipelineScheduleKind::kOneFOneB, 4, 6);
  using model::PipelinePass;
  for (int k = 0; k < 3; ++k) CHECK(s.steps[0][k].pass == PipelinePass::kForward);
  CHECK(s.steps[0][3] == model::PipelineStep{PipelinePass::kForward, 3, 0});
  CHECK(s.steps[0][4] == model::PipelineStep{PipelinePass::kBackward, 0, 0});
  CHECK(s.steps[3][0] == model::PipelineStep{PipelinePass::kForward, 0, 0});
  CHECK(s.steps[3][1] == model::PipelineStep{PipelinePass::kBackward, 0, 0});
}

TEST_CASE("uniform stages under 1F1B idle (p-1)/(m+p-1) of the step, interleaved (p-1)/(v·m+p-1)",
          "[model][pipeline]") {
  for (const int p : {2, 4, 8}) {
    for (const int m : {8, 16, 32}) {
      const model::ChunkCosts costs{1.0, 2.0};  // a backward twice its forward
      const model::PipelineTiming one =
          model::time_pipeline(model::make_pipeline_schedule(PipelineScheduleKind::kOneFOneB, p, m), costs);
      CAPTURE(p, m);
      CHECK(one.bubble_fraction == Approx(static_cast<double>(p - 1) / (m + p - 1)));
      CHECK(one.step_s == Approx((m + p - 1) * 3.0));
      const model::PipelineTiming gpipe =
          model::time_pipeline(model::make_pipeline_schedule(PipelineScheduleKind::kGpipe, p, m), costs);
      CHECK(gpipe.step_s == Approx(one.step_s));
      for (const int v : {2, 4}) {
        // Each chunk holds 1/v of the stage's layers.
        const model::ChunkCosts chunk{1.0 / v, 2.0 / v};
        const model::PipelineTiming inter =
            model::time_pipeline(model::make_pipeline_schedule(PipelineScheduleKind::kInterleaved, p, m, v), chunk);
        CAPTURE(v);
        CHECK(inter.bubble_fraction == Approx(static_cast<double>(p - 1) / (v * m + p - 1)));
      }
    }
  }
}

TEST_CASE("schedules refuse counts they cannot run, saying what is valid", "[model][pipeline]") {
  CHECK_THROWS_WITH(model::make_pipeline_schedule(PipelineScheduleKind::kInterleaved, 4, 6, 2),
                    Catch::Contains("multiple of 4"));
  CHECK_THROWS_WITH(model::make_pipeline_schedule(PipelineScheduleKind::kInterleaved, 4, 8, 1),
                    Catch::Contains("virtual_stages of 2 or more"));
  CHECK_THROWS_WITH(model::make_pipeline_schedule(PipelineScheduleKind::kOneFOneB, 4, 8, 2),
                    Catch::Contains("virtual_stages must be 1"));
  CHECK_THROWS_AS(model::make_pipeline_schedule(PipelineScheduleKind::kGpipe, 0, 8), InputError);
}
