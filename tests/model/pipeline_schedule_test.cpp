// Pipeline schedules: every pass run once, the bubbles Narayanan et al. derive for 1F1B and its interleaved
// form (GPipe's equal to 1F1B's), ZB-H1's (p-1)(F+B-W) (Qi et al.), the activations each stage holds, the
// transfers between stages, and a slow stage setting the pace.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <vector>

#include "base/input_error.hpp"
#include "model/pipeline/pipeline_schedule.hpp"
#include "sim/engine/pipeline_timing.hpp"

using namespace tpsim;
using model::PipelineScheduleKind;

TEST_CASE("every stage runs each micro-batch's forward and backward once through each of its chunks",
          "[model][pipeline]") {
  for (const auto& [kind, v] :
       std::vector<std::pair<PipelineScheduleKind, int>>{{PipelineScheduleKind::kGpipe, 1},
                                                         {PipelineScheduleKind::kOneFOneB, 1},
                                                         {PipelineScheduleKind::kInterleaved, 3},
                                                         {PipelineScheduleKind::kZeroBubbleH1, 1},
                                                         {PipelineScheduleKind::kZeroBubbleV, 2}}) {
    const model::PipelineSchedule s = model::make_pipeline_schedule(kind, 4, 8, v);
    std::vector<model::PipelinePass> passes = {model::PipelinePass::kForward, model::PipelinePass::kBackward};
    if (model::splits_weight_gradient(kind)) passes.push_back(model::PipelinePass::kWeightGradient);
    REQUIRE(s.steps.size() == 4);
    CAPTURE(model::to_string(kind));
    for (const auto& stage : s.steps) {
      CHECK(stage.size() == passes.size() * 8 * v);
      for (int mb = 0; mb < 8; ++mb) {
        for (int chunk = 0; chunk < v; ++chunk) {
          for (const auto pass : passes) {
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
          sim::time_pipeline(model::make_pipeline_schedule(PipelineScheduleKind::kOneFOneB, p, m), costs);
      CAPTURE(p, m);
      CHECK(one.bubble_fraction == Approx(static_cast<double>(p - 1) / (m + p - 1)));
      CHECK(one.step_s == Approx((m + p - 1) * 3.0));
      const model::PipelineTiming gpipe =
          sim::time_pipeline(model::make_pipeline_schedule(PipelineScheduleKind::kGpipe, p, m), costs);
      CHECK(gpipe.step_s == Approx(one.step_s));
      for (const int v : {2, 4}) {
        // Each chunk holds 1/v of the stage's layers.
        const model::ChunkCosts chunk{1.0 / v, 2.0 / v};
        const model::PipelineTiming inter =
            sim::time_pipeline(model::make_pipeline_schedule(PipelineScheduleKind::kInterleaved, p, m, v), chunk);
        CAPTURE(v);
        CHECK(inter.bubble_fraction == Approx(static_cast<double>(p - 1) / (v * m + p - 1)));
      }
    }
  }
}

TEST_CASE("ZB-H1 idles (p-1)(F+B-W) per stage where 1F1B idles (p-1)(F+B+W), holding 1F1B's peak of p micro-batches",
          "[model][pipeline]") {
  // (forward, input gradient, weight gradient): the bound holds while the weight gradient is no longer than the
  // forward (Qi et al. section 3).
  for (const auto& [f, b, w] : std::vector<std::array<double, 3>>{{1, 1, 1}, {1, 1.2, 0.8}, {1, 2, 1}, {1, 1, 0.5}}) {
    const model::ChunkCosts costs{f, b + w, w};
    for (const int p : {2, 4, 8}) {
      for (const int m : {p, 2 * p, 4 * p}) {
        CAPTURE(f, b, w, p, m);
        const auto zb = model::make_pipeline_schedule(PipelineScheduleKind::kZeroBubbleH1, p, m);
        const model::PipelineTiming t = sim::time_pipeline(zb, costs);
        CHECK(t.step_s == Approx(m * (f + b + w) + (p - 1) * (f + b - w)));
        const model::PipelineTiming one =
            sim::time_pipeline(model::make_pipeline_schedule(PipelineScheduleKind::kOneFOneB, p, m), costs);
        CHECK(one.step_s - t.step_s == Approx(2 * (p - 1) * w));
        CHECK(model::peak_in_flight(zb) == std::vector<int>(p, p));
      }
    }
  }
}

TEST_CASE("ZB-V with F = B = W idles only the V's fill, p-1 chunk passes per stage, at 1F1B's activation memory",
          "[model][pipeline]") {
  // Per chunk (half a stage's layers), F = B = W = 1. Stage p-1's first forward cannot start before chunks 0 to
  // p-2 ran it, p-1 units in, and it then has 6m units of passes: the step is at least 6m + p - 1, every stage
  // idles at least p - 1 of it. Qi et al. call ZB-V's bubble zero for F = B = W: in steady state, where stage i's
  // step runs from i to 6m + i and a post-update validation replaces the step's synchronisation.
  for (const int p : {2, 4, 8}) {
    for (const int m : {p, 2 * p, 3 * p + 1}) {
      CAPTURE(p, m);
      const model::PipelineSchedule zbv = model::make_pipeline_schedule(PipelineScheduleKind::kZeroBubbleV, p, m, 2);
      model::ChunkCosts unit;
      unit.forward_s = 1;
      unit.backward_s = 2;  // input gradient 1 + weight gradient 1
      unit.weight_gradient_s = 1;
      const model::PipelineTiming t = sim::time_pipeline(zbv, unit);
      CHECK(t.step_s == Approx(6 * m + p - 1));
      CHECK(t.bubble_fraction == Approx(static_cast<double>(p - 1) / (6 * m + p - 1)));
      // 2p chunks' activations at most: 1F1B's p micro-batches of a whole stage on its first stage.
      for (const int held : model::peak_in_flight(zbv)) CHECK(held <= 2 * p);
      // Against 1F1B over the same layers (a stage's passes are two chunks': F = 2, B + W = 4).
      model::ChunkCosts stage;
      stage.forward_s = 2;
      stage.backward_s = 4;
      const double one =
          sim::time_pipeline(model::make_pipeline_schedule(PipelineScheduleKind::kOneFOneB, p, m), stage).step_s;
      CHECK(one - t.step_s == Approx(5.0 * (p - 1)));  // (m + p - 1)·6 against 6m + p - 1
    }
  }
}

TEST_CASE("ZB-V places stage s's chunks at s and 2p-1-s, so the first and last model chunks share stage 0",
          "[model][pipeline]") {
  using model::stage_of_chunk;
  const auto v = PipelineScheduleKind::kZeroBubbleV;
  CHECK(model::model_chunk_of(v, 4, 0, 1) == 7);
  CHECK(model::model_chunk_of(v, 4, 3, 0) == 3);
  CHECK(model::model_chunk_of(v, 4, 3, 1) == 4);
  for (int c = 0; c < 8; ++c) CHECK(stage_of_chunk(v, 4, c) == (c < 4 ? c : 7 - c));
  // Megatron's interleaving: chunk v·p + s.
  CHECK(model::model_chunk_of(PipelineScheduleKind::kInterleaved, 4, 1, 1) == 5);
  CHECK(stage_of_chunk(PipelineScheduleKind::kInterleaved, 4, 5) == 1);
  // A transfer between stages costs zb-v its hop, except at the bottom of the V (chunks p-1 and p, one stage).
  model::PipelineCosts costs;
  model::ChunkCosts unit;
  unit.forward_s = 1;
  unit.backward_s = 2;
  unit.weight_gradient_s = 1;
  costs.chunk.assign(8, unit);
  costs.hop_s.assign(7, 0.25);
  costs.hop_s[3] = 0;
  const auto schedule = model::make_pipeline_schedule(v, 4, 8, 2);
  CHECK(sim::time_pipeline(schedule, costs).step_s > sim::time_pipeline(schedule, unit).step_s);
  // Fewer micro-batches than stages still run: the step is the forward down and up the V, and the backward.
  for (const int m : {1, 2, 3}) {
    CAPTURE(m);
    const model::PipelineTiming t = sim::time_pipeline(model::make_pipeline_schedule(v, 4, m, 2), unit);
    CHECK(t.step_s >= 4 * 4 + 1);  // 2p forwards, 2p input gradients, one weight gradient, one after another
  }
}

TEST_CASE("1F1B stage s holds p-s micro-batches' activations, GPipe all of them", "[model][pipeline]") {
  const std::vector<int> one =
      model::peak_in_flight(model::make_pipeline_schedule(PipelineScheduleKind::kOneFOneB, 4, 8));
  CHECK(one == std::vector<int>{4, 3, 2, 1});
  const std::vector<int> few =
      model::peak_in_flight(model::make_pipeline_schedule(PipelineScheduleKind::kOneFOneB, 4, 2));
  CHECK(few == std::vector<int>{2, 2, 2, 1});
  CHECK(model::peak_in_flight(model::make_pipeline_schedule(PipelineScheduleKind::kGpipe, 4, 8)) ==
        std::vector<int>(4, 8));
}

TEST_CASE("gradients accumulated over the micro-batches peak beside the activations 1F1B and GPipe still hold",
          "[model][pipeline]") {
  // Each micro-batch chunk saves a bytes; each chunk's gradient, g bytes, lives from its first backward's end to its
  // last's. 1F1B's stage s holds n = min(p - s, m) micro-batches at most: where a forward follows its first backward
  // (m > n) it holds n again beside the gradient, else n - 1 at most. GPipe's stages run every forward first.
  const double a = 1.0;
  for (const double g : {0.5, 2.5}) {
    for (const auto& [p, m] : std::vector<std::pair<int, int>>{{4, 8}, {4, 4}, {4, 2}, {8, 8}}) {
      CAPTURE(g, p, m);
      const model::PipelineSchedule one = model::make_pipeline_schedule(PipelineScheduleKind::kOneFOneB, p, m);
      const std::vector<std::vector<double>> saved(static_cast<size_t>(p), std::vector<double>{a});
      const std::vector<std::vector<double>> gradients(static_cast<size_t>(p), std::vector<double>{g});
      const std::vector<model::HeldPeak> held = model::peak_held(one, saved, gradients);
      for (int s = 0; s < p; ++s) {
        const int n = std::min(p - s, m);
        const double expected = m > n ? n * a + g : std::max(n * a, (n - 1) * a + g);
        CHECK(held[static_cast<size_t>(s)].activation_bytes + held[static_cast<size_t>(s)].gradient_bytes ==
              Approx(expected).epsilon(1e-12));
      }
      const model::PipelineSchedule gpipe = model::make_pipeline_schedule(PipelineScheduleKind::kGpipe, p, m);
      for (const model::HeldPeak& h : model::peak_held(gpipe, saved, gradients)) {
        CHECK(h.activation_bytes + h.gradient_bytes == Approx(std::max(m * a, (m - 1) * a + g)).epsilon(1e-12));
      }
    }
  }
  // One micro-batch: its backward is the last, which reduces the gradients as it makes them.
  const model::PipelineSchedule single = model::make_pipeline_schedule(PipelineScheduleKind::kOneFOneB, 4, 1);
  for (const model::HeldPeak& h :
       model::peak_held(single, std::vector<std::vector<double>>(4, {a}), std::vector<std::vector<double>>(4, {2.5}))) {
    CHECK(h.gradient_bytes == 0.0);
    CHECK(h.activation_bytes == a);
  }
}

TEST_CASE("GPipe pays every transfer on its critical path: a stage posts each receive once done with its last pass",
          "[model][pipeline]") {
  for (const int p : {2, 4, 8}) {
    const double f = 1.0, b = 2.0, hop = 0.25;
    const int m = 8;
    model::PipelineCosts costs;
    costs.chunk.assign(p, model::ChunkCosts{f, b, 0});
    costs.hop_s.assign(p - 1, hop);
    const auto gpipe = model::make_pipeline_schedule(PipelineScheduleKind::kGpipe, p, m);
    CAPTURE(p);
    // The first forward crosses p - 1 boundaries; then the last stage receives each of its m - 1 other forwards
    // only after running the one before; the backward likewise: 2 (m + p - 2) transfers in series with the passes.
    CHECK(sim::time_pipeline(gpipe, costs).step_s == Approx((m + p - 1) * (f + b) + 2 * (m + p - 2) * hop));
  }
  model::PipelineCosts wrong;
  wrong.chunk.assign(4, model::ChunkCosts{1.0, 2.0, 0});
  wrong.hop_s.assign(4, 0.25);  // one per boundary: 3
  CHECK_THROWS_AS(sim::time_pipeline(model::make_pipeline_schedule(PipelineScheduleKind::kGpipe, 4, 8), wrong),
                  std::logic_error);
}

TEST_CASE("a stage's first forward waits for its gathered parameters and its optimizer for its gradients' reduction",
          "[model][pipeline]") {
  const int p = 4, m = 8;
  const double f = 1.0, b = 2.0;
  const auto schedule = model::make_pipeline_schedule(PipelineScheduleKind::kOneFOneB, p, m);
  model::PipelineCosts costs;
  costs.chunk.assign(p, model::ChunkCosts{f, b, 0});
  const model::PipelineTiming plain = sim::time_pipeline(schedule, costs);
  // Every chain of the step runs through stage 0's first forward: gathered G after the start, all shifts by G - F.
  const double gathered = 3.5;
  model::PipelineCosts first = costs;
  first.chunk[0].gathered_forward_s = gathered;
  CHECK(sim::time_pipeline(schedule, first).step_s == Approx(plain.step_s + gathered - f));
  // Stage s starts its first forward at s·F: parameters gathered by then cost nothing.
  model::PipelineCosts later = costs;
  for (int s = 1; s < p; ++s) later.chunk[s].gathered_forward_s = s * f + f;
  CHECK(sim::time_pipeline(schedule, later).step_s == Approx(plain.step_s));
  // The reduction's traffic slowing the last backward delays every chain through it.
  model::PipelineCosts slowed = costs;
  slowed.chunk[p - 1].synced_backward_extra_s = 0.25;
  CHECK(sim::time_pipeline(schedule, slowed).step_s == Approx(plain.step_s + 0.25));
  // A reduction past the last backward delays only its stage's end, not the passes.
  model::PipelineCosts tail = costs;
  tail.chunk[p - 1].reduce_tail_s = 0.75;
  const model::PipelineTiming reduced = sim::time_pipeline(schedule, tail);
  CHECK(reduced.step_s == Approx(plain.step_s));
  CHECK(reduced.bubble_fraction == Approx(plain.bubble_fraction));
  CHECK(reduced.end_s[p - 1] == Approx(plain.end_s[p - 1] + 0.75));
  CHECK(reduced.end_s[0] == Approx(plain.end_s[0]));
}

TEST_CASE("a slower stage sets GPipe's pace: sum of the stages' passes plus m-1 of the slowest", "[model][pipeline]") {
  // Identical micro-batches through stages in series (a flow shop): the forwards take the sum of the stages'
  // forwards plus m-1 of the slowest, then the backwards the same from the last stage.
  const int p = 4, m = 8;
  model::PipelineCosts costs;
  costs.chunk.assign(p, model::ChunkCosts{1.0, 2.0, 0});
  costs.chunk[2] = model::ChunkCosts{1.5, 3.0, 0};
  const double forwards = 3 * 1.0 + 1.5 + (m - 1) * 1.5, backwards = 3 * 2.0 + 3.0 + (m - 1) * 3.0;
  const auto gpipe = model::make_pipeline_schedule(PipelineScheduleKind::kGpipe, p, m);
  CHECK(sim::time_pipeline(gpipe, costs).step_s == Approx(forwards + backwards));
  costs.chunk.pop_back();
  CHECK_THROWS_AS(sim::time_pipeline(gpipe, costs), std::logic_error);
}

TEST_CASE("schedules refuse counts they cannot run, saying what is valid", "[model][pipeline]") {
  CHECK_THROWS_WITH(model::make_pipeline_schedule(PipelineScheduleKind::kInterleaved, 4, 6, 2),
                    Catch::Contains("multiple of 4"));
  CHECK_THROWS_WITH(model::make_pipeline_schedule(PipelineScheduleKind::kInterleaved, 4, 8, 1),
                    Catch::Contains("virtual_stages of 2 or more"));
  CHECK_THROWS_WITH(model::make_pipeline_schedule(PipelineScheduleKind::kOneFOneB, 4, 8, 2),
                    Catch::Contains("virtual_stages must be 1"));
  CHECK_THROWS_WITH(model::make_pipeline_schedule(PipelineScheduleKind::kZeroBubbleH1, 4, 8, 2),
                    Catch::Contains("zb-h1 runs one model chunk per stage"));
  CHECK_THROWS_WITH(model::make_pipeline_schedule(PipelineScheduleKind::kZeroBubbleV, 4, 8, 1),
                    Catch::Contains("zb-v runs two model chunks per stage in a V: virtual_stages must be 2"));
  CHECK_THROWS_AS(model::make_pipeline_schedule(PipelineScheduleKind::kGpipe, 0, 8), InputError);
}
