// The causal mask's backward cost in tokens, fitted on public kernel benchmarks, and what it costs a backward op.
#include <catch2/catch.hpp>

#include <array>

#include "calibrate/fits/causal_mask_fit.hpp"
#include "model/graph/op.hpp"
#include "test_support.hpp"

using namespace tpsim;

TEST_CASE("points exactly on 1 + D / L give D back with no error") {
  const double tokens = 700;
  std::array<calibrate::CausalBackwardPoint, 3> points{};
  const std::array<double, 3> lengths = {2048, 8192, 32768};
  for (size_t i = 0; i < points.size(); ++i) {
    // The causal rate is the unmasked one over the time ratio.
    points[i] = {lengths[i], 500.0, 500.0 / (1.0 + tokens / lengths[i])};
  }
  const calibrate::CausalTokensFit fit = calibrate::fit_causal_tokens(points);
  CHECK(fit.tokens == Approx(tokens).epsilon(1e-12));
  CHECK(fit.max_abs_error_pct == Approx(0.0).margin(1e-9));
}

TEST_CASE("the shipped kernels' causal tokens fit their published points within 5% of the causal backward's time") {
  for (const char* kernel : {"fa3", "fa2", "cudnn"}) {
    const calibrate::PublishedCausalBackward* published = &calibrate::published_causal_backward(kernel);
    INFO(published->source);
    const calibrate::CausalTokensFit fit = calibrate::fit_causal_tokens(published->points);
    // 600-800 tokens: a causal backward at 8k runs 8-10% slower per FLOP than an unmasked one.
    CHECK(fit.tokens > 600);
    CHECK(fit.tokens < 850);
    // 4% at most (cuDNN 9.1 at 8k): one constant over 4k-16k, the measured ratio falling faster than 1 / L above 8k.
    CHECK(fit.max_abs_error_pct < 5.0);
    for (const calibrate::CausalBackwardPoint& p : published->points) {
      CHECK(1.0 + fit.tokens / p.seq_len == Approx(p.unmasked_tflops / p.causal_tflops).epsilon(0.05));
    }
  }
}

TEST_CASE(
    "a causal backward of L tokens takes 1 + D / L times an unmasked one of the same FLOPs, a causal forward not") {
  const sim::CostModel cost = test::h100_cost();
  const double tokens = cost.profile().attention.backward_causal_tokens;
  REQUIRE(tokens > 0);
  model::Op unmasked;
  unmasked.kind = model::OpKind::kAttention;
  unmasked.stage = model::OpStage::kBackward;
  unmasked.flops = 1e12;
  model::Op causal = unmasked;
  causal.causal_inverse_length = 1.0 / 4096;
  CHECK(cost.kernel_cost(causal).compute_s ==
        Approx(cost.kernel_cost(unmasked).compute_s * (1.0 + tokens / 4096)).epsilon(1e-12));
  // The forward's efficiency is a causal rate (at 8k-16k): a causal forward's time does not depend on its length.
  model::Op longer = causal;
  longer.causal_inverse_length = 1.0 / 16384;
  causal.stage = longer.stage = model::OpStage::kForward;
  CHECK(cost.kernel_cost(causal).compute_s == cost.kernel_cost(longer).compute_s);
}
