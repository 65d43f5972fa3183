// The power limiter's window: a program's clock from its average draw, and the runs that find it.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <optional>

#include "sim/cost/power_limit.hpp"
#include "sim/engine/isolated_run.hpp"
#include "sim/engine/runner/window_clock.hpp"
#include "test_support.hpp"

using namespace tpsim;

namespace {

sim::CostProfile windowed_profile() {
  sim::CostProfile profile = test::profile_preset("h100-sxm");
  profile.power = sim::PowerParams{700, 70, 3, 14.48, 0.85};
  return profile;
}

// The window's energy above the limit at ratio r, written out as the model states it (power_limit.hpp).
double excess_J(const sim::PowerParams& p, double limit_W, const sim::WindowDraw& d, double simulated, double r) {
  const double compute_s = d.compute_s * simulated / r;
  const double span_s = d.span_s + compute_s - d.compute_s;
  const double compute_W = (p.measured_at_W - p.idle_W) * std::pow(r / p.sustained_ratio, p.exponent);
  return p.idle_W * span_s + compute_s * compute_W + d.other_J - limit_W * span_s;
}

model::Op gemm_op(const std::string& name) {
  model::Op op;
  op.name = name;
  op.kind = model::OpKind::kGemm;
  op.gemm = {8192, 8192, 8192};
  op.flops = 2.0 * 8192 * 8192 * 8192;
  op.bytes_read = 2.0 * 2 * 8192 * 8192;
  op.bytes_written = 2.0 * 8192 * 8192;
  return op;
}

}  // namespace

TEST_CASE("compute-bound kernels back to back hold the sustained ratio at the power they were measured at",
          "[sim][power][window]") {
  const sim::PowerParams curve{700, 70, 3, 0, 0.85};
  CHECK(sim::clock_ratio_at(curve, 700) == Approx(0.85));
  // Below it the curve from that anchor: r = a ((limit - idle) / (measured - idle))^(1 / exponent).
  CHECK(sim::clock_ratio_at(curve, 500) == Approx(0.85 * std::cbrt(430.0 / 630.0)));
  // Above it the clock rises, to the short benchmarks' at most.
  CHECK(sim::clock_ratio_at(curve, 800) == Approx(0.85 * std::cbrt(730.0 / 630.0)));
  CHECK(sim::clock_ratio_at(curve, 2000) == 1.0);
}

TEST_CASE("a window of compute-bound kernels alone runs at the back-to-back clock", "[sim][power][window]") {
  const sim::CostProfile profile = windowed_profile();
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const double back_to_back = sim::back_to_back_clock_ratio(gpu, profile);
  REQUIRE(back_to_back == Approx(0.85));
  // A kernel alone is over before the limiter engages.
  CHECK(sim::compute_clock_ratio(gpu, profile) == 1.0);
  // Simulated at the full clock, every second of it compute: the compute time stretches by 1 / r, nothing else.
  const sim::WindowDraw all_compute{1.0, 1.0, 0.0};
  CHECK(sim::window_clock_ratio(gpu, profile, all_compute, 1.0) == Approx(back_to_back).epsilon(1e-12));
  CHECK(sim::window_clock_ratio(gpu, profile, all_compute, back_to_back) == Approx(back_to_back).epsilon(1e-12));
}

TEST_CASE("gaps and memory-bound kernels in the window let its compute-bound kernels clock up",
          "[sim][power][window]") {
  const sim::CostProfile profile = windowed_profile();
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const sim::PowerParams& p = *profile.power;
  // 70% of the span compute at 0.85; the rest a copy at 3 TB/s of HBM reads and writes.
  const double copy_J = sim::hbm_energy_J(gpu, 3e12 * 0.3);
  REQUIRE(copy_J == Approx(3e12 * 0.3 * 8 * gpu.hbm_pJ_per_bit * 1e-12));
  const sim::WindowDraw half{1.0, 0.7, copy_J};
  const double r = sim::window_clock_ratio(gpu, profile, half, 0.85);
  CHECK(r > 0.85);
  CHECK(r < 1.0);
  // At the clock found the window's mean draw is the limit (the bisection's resolution, far below a watt).
  CHECK(excess_J(p, 700, half, 0.85, r) == Approx(0).margin(1e-9));
  // The same share with idle gaps instead of the copy: a lower mean draw, a higher clock.
  const sim::WindowDraw idle_gaps{1.0, 0.7, 0.0};
  CHECK(sim::window_clock_ratio(gpu, profile, idle_gaps, 0.85) > r);
  // Mostly gaps: the mean stays under the limit at the full clock.
  CHECK(sim::window_clock_ratio(gpu, profile, sim::WindowDraw{1.0, 0.1, 0.0}, 0.85) == 1.0);
}

TEST_CASE("a profile without a sustained ratio keeps the rates at its measured power, whatever the window",
          "[sim][power][window]") {
  sim::CostProfile profile = test::profile_preset("a100-sxm");
  REQUIRE(profile.power);
  REQUIRE(profile.power->sustained_ratio == 0);
  CHECK_FALSE(sim::windowed_power(profile));
  CHECK(sim::window_clock_ratio(test::gpu_preset("a100-sxm"), profile, sim::WindowDraw{1.0, 1.0, 0.0}, 1.0) == 1.0);
}

TEST_CASE("a window's draw counts merged compute intervals, memory-bound bytes and transfers per GPU",
          "[sim][power][window]") {
  const sim::CostModel cost(test::gpu_preset("h100-sxm"), windowed_profile());
  model::LayerGraph graph(2);
  const model::OpId first = graph.add(gemm_op("a"));
  const model::OpId second = graph.add(gemm_op("b"));
  model::Op copy;
  copy.name = "copy";
  copy.kind = model::OpKind::kMemory;
  copy.bytes_read = 1e9;
  copy.bytes_written = 1e9;
  const model::OpId memory = graph.add(copy);
  model::Op gather;
  gather.name = "ag";
  gather.kind = model::OpKind::kCollective;
  gather.collective = model::CollectiveKind::kAllGather;
  gather.tensor_bytes = 64e6;
  gather.group_size = 2;
  const model::OpId collective = graph.add(gather);
  sim::Timeline timeline;
  timeline.ranks = 2;
  timeline.makespan_s = 10e-3;
  // Rank 0: the two GEMMs overlap by 1 ms (3 ms merged); rank 1: back to back (4 ms).
  timeline.spans = {{first, 0, 0, 2e-3},         {first, 1, 0, 2e-3},        {second, 0, 1e-3, 3e-3},
                    {second, 1, 2e-3, 4e-3},     {memory, 0, 3e-3, 4e-3},    {memory, 1, 4e-3, 5e-3},
                    {collective, 0, 5e-3, 9e-3}, {collective, 1, 5e-3, 9e-3}};
  std::vector<sim::CommPlan> plans(graph.size());
  plans[collective].steps = 1;
  plans[collective].message_bytes = 32e6;
  plans[collective].send_offsets = {1};
  plans[collective].hbm_accesses_per_link_byte = 3;
  timeline.plans = std::make_shared<const std::vector<sim::CommPlan>>(plans);
  const sim::WindowDraw draw = sim::window_draw(graph, cost, timeline);
  CHECK(draw.span_s == Approx(20e-3));
  CHECK(draw.compute_s == Approx(3e-3 + 4e-3));
  // Per GPU: the copy's 2 GB at the HBM energy; 32 MB each way at the transfer energy (both directions), and one
  // extra HBM access per incoming byte beyond a copy's two.
  const double hbm_pJ = cost.gpu().hbm_pJ_per_bit;
  const double per_gpu_J = 2e9 * 8 * hbm_pJ * 1e-12 + 2 * 32e6 * 8 * 14.48e-12 + 32e6 * 8 * hbm_pJ * 1e-12;
  CHECK(draw.other_J == Approx(2 * per_gpu_J));
}

TEST_CASE(
    "a simulated program runs at its own window's clock: simulating again there moves it by less than the "
    "tolerance",
    "[sim][power][window]") {
  const sim::CostModel cost(test::gpu_preset("h100-sxm"), windowed_profile());
  model::LayerGraph graph(1);
  model::OpId previous = graph.add(gemm_op("g0"));
  for (int i = 1; i < 6; ++i) {
    model::Op copy;
    copy.name = "copy" + std::to_string(i);
    copy.kind = model::OpKind::kMemory;
    copy.bytes_read = 2e9;
    copy.bytes_written = 2e9;
    copy.deps = {model::Dep{previous}};
    const model::OpId c = graph.add(copy);
    model::Op g = gemm_op("g" + std::to_string(i));
    g.deps = {model::Dep{c}};
    previous = graph.add(g);
  }
  const sim::Timeline timeline = sim::simulate(graph, cost);
  // GEMMs about half the span beside copies: above the back-to-back clock, below the short benchmarks'.
  CHECK(timeline.clock_ratio > sim::back_to_back_clock_ratio(cost.gpu(), cost.profile()));
  CHECK(timeline.clock_ratio < 1.0);
  const sim::CostModel at = cost.at_clock(timeline.clock_ratio);
  const double again =
      sim::window_clock_ratio(cost.gpu(), cost.profile(), sim::window_draw(graph, at, timeline), timeline.clock_ratio);
  CHECK(std::abs(again - timeline.clock_ratio) <= sim::kWindowClockTolerance);
}

TEST_CASE("the H200 duty-cycle probe's GEMM rates come out of the window within 4%", "[sim][power][window]") {
  // real/results/h200-2026-12-04/torch/duty.json: 8192^3 bf16 GEMMs alternating with 1 GiB copies (2 GiB read and
  // written each, at the measured TB/s) or idle gaps, cycles of about 20 ms for 10 s each at 700 W.
  struct Row {
    int gemms, copies;
    double copy_TBps, cycle_s, measured_tflops;
  };
  const Row rows[] = {{4, 33, 4.267786, 0.0223499, 776.36},
                      {7, 19, 4.264200, 0.0200010, 740.79},
                      {11, 10, 4.249898, 0.0230685, 671.55},
                      {4, 0, 0, 0.0228644, 769.29},
                      {7, 0, 0, 0.0200323, 776.38}};
  const sim::GpuSpec gpu = test::gpu_preset("h200-sxm");
  sim::CostProfile profile = test::profile_preset("h200-sxm");
  // The measured ratio: the same probe's 40 s loop, 659.4 TFLOP/s over 781.9 alone (torch/sustained.json).
  profile.power->sustained_ratio = 0.843;
  const sim::CostModel cost(gpu, profile);
  const model::GemmShape shape{8192, 8192, 8192};
  const double flops = 2.0 * 8192 * 8192 * 8192;
  const double gemm_s = cost.gemm_seconds(shape, 3 * 2.0 * 8192 * 8192);  // the profile's short-benchmark time
  const double copy_bytes = 2.0 * 1024 * 1024 * 1024;
  for (const Row& row : rows) {
    // The gaps between GEMMs: the copies' measured time, or what the cycle leaves beside its measured GEMMs.
    const double gap_s = row.copies > 0 ? row.copies * copy_bytes / (row.copy_TBps * 1e12)
                                        : row.cycle_s - row.gemms * flops / (row.measured_tflops * 1e12);
    const sim::WindowDraw draw{row.gemms * gemm_s + gap_s, row.gemms * gemm_s,
                               sim::hbm_energy_J(gpu, row.copies * copy_bytes)};
    const double ratio = sim::window_clock_ratio(gpu, profile, draw, 1.0);
    const double predicted_tflops = flops / (gemm_s / ratio) / 1e12;
    // 4%: the 0.52 row's GEMMs ran 3.8% faster than one clock for the whole cycle gives (the limiter reacts within
    // the 20 ms cycle); the other rows within 1%.
    CHECK(predicted_tflops == Approx(row.measured_tflops).epsilon(0.04));
  }
}

TEST_CASE(
    "a program guessed unbound runs once at the short benchmarks' clock, and a wrong guess ends where the loop does",
    "[sim][power][window]") {
  const sim::CostProfile profile = windowed_profile();
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const sim::CostModel cost(gpu, profile);
  // A decode step's shape: 5 ms of memory-bound kernels at 3 TB/s of HBM traffic, 0.5 ms of GEMMs (at clock 1):
  // 0.5 ms x 1,026 W (630 W x (1 / 0.85)^3) + 1.4 J from the traffic = 1.9 J, where 630 W over 5.5 ms allows 3.47 J;
  // the reverse shape draws 5.1 J + 0.14 J over the same 5.5 ms.
  const double memory_J = sim::hbm_energy_J(gpu, 3e12 * 5e-3);
  CHECK(sim::likely_unbound(cost, 0.5e-3, 5e-3, memory_J));
  CHECK_FALSE(sim::likely_unbound(cost, 5e-3, 0.5e-3, sim::hbm_energy_J(gpu, 3e12 * 0.5e-3)));
  // A run at ratio r: the compute-bound time stretches by 1 / r beside a fixed memory-bound time; the result is the
  // clock it ran at.
  const auto program = [&](double compute_s, double memory_s, int& runs) {
    return [&, compute_s, memory_s](const sim::CostModel& at, sim::WindowDraw& draw) {
      ++runs;
      const double stretched = compute_s / at.clock_ratio();
      draw = {stretched + memory_s, stretched, sim::hbm_energy_J(gpu, 3e12 * memory_s)};
      return at.clock_ratio();
    };
  };
  int guessed = 0, looped = 0;
  const auto [unbound, unbound_clock] = sim::at_window_clock(cost, program(0.5e-3, 5e-3, guessed), true);
  const auto [loop_unbound, loop_unbound_clock] = sim::at_window_clock(cost, program(0.5e-3, 5e-3, looped), false);
  CHECK(guessed == 1);
  CHECK(looped == 2);  // at the back-to-back clock, then at 1
  CHECK(unbound == 1.0);
  CHECK(unbound_clock == 1.0);
  CHECK(loop_unbound == unbound);
  CHECK(loop_unbound_clock == unbound_clock);
  // GEMMs back to back guessed unbound: the first run is spent, the loop's runs and answer follow unchanged.
  guessed = looped = 0;
  const auto [bound, bound_clock] = sim::at_window_clock(cost, program(5e-3, 0.5e-3, guessed), true);
  const auto [loop_bound, loop_bound_clock] = sim::at_window_clock(cost, program(5e-3, 0.5e-3, looped), false);
  CHECK(guessed == looped + 1);
  CHECK(bound == loop_bound);
  CHECK(bound_clock == loop_bound_clock);
  CHECK(bound_clock < 1.0);
}

TEST_CASE(
    "a first-run probe ends a window loop that would run again with a bound at most its step, once per probe, and lets "
    "a loop of one run finish",
    "[sim][power][window]") {
  const sim::CostProfile profile = windowed_profile();
  const sim::GpuSpec gpu = test::gpu_preset("h100-sxm");
  const sim::CostModel cost(gpu, profile);
  // GEMMs back to back beside a little memory traffic: the clock moves after the back-to-back run, so the loop runs
  // again. A run's result is its time: the compute-bound time at its clock and the memory-bound time.
  const double compute_s = 5e-3, memory_s = 0.5e-3;
  const double memory_J = sim::hbm_energy_J(gpu, 3e12 * memory_s);
  const auto program = [&](double compute, double memory) {
    return [&, compute, memory](const sim::CostModel& at, sim::WindowDraw& draw) {
      const double stretched = compute / at.clock_ratio();
      draw = {stretched + memory, stretched, memory > 0 ? memory_J : 0.0};
      return stretched + memory;
    };
  };
  const auto time_of = [](double time_s) { return time_s; };
  const double step_s = sim::at_window_clock(cost, program(compute_s, memory_s), false, time_of).first;
  // The bound the back-to-back run gives: its time scaled by the back-to-back clock over the highest clock its draw
  // with the span held allows.
  const double back_to_back = sim::back_to_back_clock_ratio(gpu, profile);
  const double first_s = compute_s / back_to_back + memory_s;
  const sim::WindowDraw first_draw{first_s, compute_s / back_to_back, memory_J};
  const double highest = sim::held_span_clock_ratio(gpu, profile, first_draw, back_to_back);
  CHECK(highest >= sim::window_clock_ratio(gpu, profile, first_draw, back_to_back));
  {
    const sim::FirstRunProbe probe;
    std::optional<double> bound;
    try {
      sim::at_window_clock(cost, program(compute_s, memory_s), false, time_of);
    } catch (const sim::FirstRunBound& fired) {
      bound = fired.step_s;
    }
    REQUIRE(bound);
    // 1e-12: the bound and this value are the same products of the same doubles, up to rounding.
    CHECK(*bound == Approx(first_s * back_to_back / std::max(back_to_back, highest)).epsilon(1e-12));
    CHECK(*bound <= step_s);
    // Fired once: the next loop runs to its end, as without a probe.
    CHECK_FALSE(sim::FirstRunProbe::armed());
    CHECK(sim::at_window_clock(cost, program(compute_s, memory_s), false, time_of).first == step_s);
  }
  CHECK_FALSE(sim::FirstRunProbe::armed());
  {
    // A program of memory-bound kernels only ends its loop at its first run: the probe lets it finish.
    const sim::FirstRunProbe probe;
    CHECK(sim::at_window_clock(cost, program(0.0, memory_s), false, time_of).first == memory_s);
    CHECK(sim::FirstRunProbe::armed());
  }
}
