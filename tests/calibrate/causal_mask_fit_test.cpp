// The causal mask's forward and backward costs, fitted on public kernel benchmarks, and what they cost an op.
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

TEST_CASE("points exactly on R / (1 + D / L) give the causal forward's R and D back with no error") {
  const double rate = 640, tokens = 500;
  std::array<calibrate::CausalForwardPoint, 4> points{};
  const std::array<double, 4> lengths = {512, 2048, 8192, 32768};
  for (size_t i = 0; i < points.size(); ++i) points[i] = {lengths[i], rate / (1.0 + tokens / lengths[i])};
  const calibrate::CausalForwardFit fit = calibrate::fit_causal_forward(points);
  CHECK(fit.long_tflops == Approx(rate).epsilon(1e-9));
  CHECK(fit.tokens == Approx(tokens).epsilon(1e-9));
  CHECK(fit.max_abs_error_pct == Approx(0.0).margin(1e-9));
}

TEST_CASE("one length does not fit a causal forward's two values") {
  const std::array points = {calibrate::CausalForwardPoint{4096, 500}};
  const calibrate::CausalForwardFit fit = calibrate::fit_causal_forward(points);
  CHECK(fit.long_tflops == 0);
  CHECK(fit.tokens == 0);
}

TEST_CASE("the shipped kernels' causal forwards fit the FlashAttention-3 paper's bars within 4% of their time") {
  for (const char* kernel : {"fa3", "fa2", "cudnn"}) {
    const calibrate::PublishedCausalForward& published = calibrate::published_causal_forward(kernel);
    INFO(kernel);
    const calibrate::CausalForwardFit fit = calibrate::fit_causal_forward(published.points);
    // 3.3% at most (FlashAttention-2 at 1k): one constant from 512 to 16k tokens, the short lengths' rows and waves
    // not exactly 1 / L.
    CHECK(fit.max_abs_error_pct < 4.0);
    // Over long sequences above the fastest bar (16k), and at 512 tokens 35-50% below it.
    CHECK(fit.long_tflops > published.points.back().causal_tflops);
    CHECK(fit.tokens > 300);
    CHECK(fit.tokens < 700);
    for (const calibrate::CausalForwardPoint& p : published.points) {
      CHECK(fit.long_tflops / (1.0 + fit.tokens / p.seq_len) == Approx(p.causal_tflops).epsilon(0.04));
    }
  }
}

TEST_CASE("a causal attention of L tokens takes 1 + D / L times its FLOPs' time at the kernel's rate, both ways") {
  const sim::CostModel cost = test::h100_cost();
  const sim::AttentionParams& a = cost.profile().attention;
  REQUIRE(a.backward_causal_tokens > 0);
  REQUIRE(a.forward_causal_tokens > 0);
  model::Op unmasked;
  unmasked.kind = model::OpKind::kAttention;
  unmasked.stage = model::OpStage::kBackward;
  unmasked.flops = 1e12;
  model::Op causal = unmasked;
  causal.causal_inverse_length = 1.0 / 4096;
  CHECK(cost.kernel_cost(causal).compute_s ==
        Approx(cost.kernel_cost(unmasked).compute_s * (1.0 + a.backward_causal_tokens / 4096)).epsilon(1e-12));
  // The forward: at its causal rate over long sequences times 1 + D / L; against the FlashAttention-3 paper's bars
  // at 4k and 16k (579 and 616 TFLOP/s) within 4% (the fit's error).
  model::Op longer = causal;
  longer.causal_inverse_length = 1.0 / 16384;
  causal.stage = longer.stage = model::OpStage::kForward;
  const double ratio = cost.kernel_cost(causal).compute_s / cost.kernel_cost(longer).compute_s;
  CHECK(ratio ==
        Approx((1.0 + a.forward_causal_tokens / 4096) / (1.0 + a.forward_causal_tokens / 16384)).epsilon(1e-12));
  CHECK(ratio == Approx(616.0 / 579.0).epsilon(0.04));
}
