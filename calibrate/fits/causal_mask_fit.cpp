// The causal mask's forward and backward costs fitted on public kernel benchmarks, with their sources.
#include "calibrate/fits/causal_mask_fit.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "base/units.hpp"

namespace tpsim::calibrate {
namespace {

// FlashAttention-3 on H100 SXM, bf16, head dim 128, B 4, H 48 (tritonbench through meta-pytorch/tritonbench#1256,
// unmasked TFLOP/s, and #1267, causal microseconds turned into TFLOP/s over 2.5 x 2 B H L^2 d FLOPs).
constexpr std::array kFa3 = {CausalBackwardPoint{4096, 519.827, 443.976}, CausalBackwardPoint{8192, 561.410, 538.689}};
// FlashAttention-2 as PyTorch's SDPA ran it (PyTorch 24.03 container) and cuDNN 9.1's fused attention, in one harness
// (NVIDIA/cudnn-frontend b740542, benchmark/benchmark_results.csv: bf16, head dim 128, B L = 16k, 16 heads).
constexpr std::array kFa2 = {CausalBackwardPoint{4096, 287.36, 248.76}, CausalBackwardPoint{8192, 303.29, 277.44},
                             CausalBackwardPoint{16384, 308.87, 305.18}};
constexpr std::array kCudnn = {CausalBackwardPoint{4096, 517.25, 443.60}, CausalBackwardPoint{8192, 530.37, 463.54},
                               CausalBackwardPoint{16384, 538.46, 497.68}};

// The FlashAttention-3 paper's forward with a causal mask (Shah et al. 2024, Fig. 5d: H100 80GB SXM5, head dim 128,
// 16k tokens in all, 16 heads; the figure as Dao-AILab/flash-attention 7ef2484 ships it, assets/flash3_fp16_fwd.png,
// each bar's value printed on it), TFLOP/s over half the pairs, 512 to 16384 tokens.
constexpr std::array kFa3Forward = {CausalForwardPoint{512, 292},  CausalForwardPoint{1024, 423},
                                    CausalForwardPoint{2048, 521}, CausalForwardPoint{4096, 579},
                                    CausalForwardPoint{8192, 602}, CausalForwardPoint{16384, 616}};
constexpr std::array kFa2Forward = {CausalForwardPoint{512, 191},  CausalForwardPoint{1024, 260},
                                    CausalForwardPoint{2048, 298}, CausalForwardPoint{4096, 319},
                                    CausalForwardPoint{8192, 333}, CausalForwardPoint{16384, 335}};
constexpr std::array kCudnnForward = {CausalForwardPoint{512, 315},  CausalForwardPoint{1024, 410},
                                      CausalForwardPoint{2048, 484}, CausalForwardPoint{4096, 518},
                                      CausalForwardPoint{8192, 529}, CausalForwardPoint{16384, 539}};

}  // namespace

CausalTokensFit fit_causal_tokens(std::span<const CausalBackwardPoint> points) {
  double sum_excess = 0, sum_inverse_sq = 0;
  for (const CausalBackwardPoint& p : points) {
    sum_excess += (p.unmasked_tflops / p.causal_tflops - 1.0) / p.seq_len;
    sum_inverse_sq += 1.0 / (p.seq_len * p.seq_len);
  }
  CausalTokensFit fit;
  fit.tokens = sum_inverse_sq > 0 ? sum_excess / sum_inverse_sq : 0.0;
  for (const CausalBackwardPoint& p : points) {
    const double measured = p.unmasked_tflops / p.causal_tflops, predicted = 1.0 + fit.tokens / p.seq_len;
    fit.max_abs_error_pct = std::max(fit.max_abs_error_pct, std::abs(predicted / measured - 1.0) * 100.0);
  }
  return fit;
}

const PublishedCausalBackward& published_causal_backward(const std::string& kernel) {
  static const std::map<std::string, PublishedCausalBackward> published = {
      {"fa3",
       {kFa3,
        "FlashAttention-3 on H100 SXM in tritonbench (meta-pytorch/tritonbench#1256 and #1267, bf16, head dim 128)"}},
      {"fa2",
       {kFa2, "FlashAttention-2 as PyTorch's SDPA in cudnn-frontend's benchmark (NVIDIA/cudnn-frontend b740542)"}},
      {"cudnn", {kCudnn, "cuDNN 9.1 in cudnn-frontend's benchmark (NVIDIA/cudnn-frontend b740542)"}},
  };
  return published.at(kernel);
}

std::string causal_tokens_source(const PublishedCausalBackward& published) {
  const CausalTokensFit fit = fit_causal_tokens(published.points);
  return "; its causal backward " + model::format_number("%.0f", fit.tokens) + " tokens more (fitted on " +
         published.source + ": " + std::to_string(published.points.size()) + " lengths, " +
         model::format_number("%.0f", published.points.front().seq_len) + " to " +
         model::format_number("%.0f", published.points.back().seq_len) + " tokens, max error " +
         model::format_number("%.1f%%", fit.max_abs_error_pct) + ")";
}

CausalForwardFit fit_causal_forward(std::span<const CausalForwardPoint> points) {
  // The predicted time over the measured one is (a + b / L) r with a = 1 / R, b = D / R: least squares of it against
  // 1, two normal equations.
  double s11 = 0, s12 = 0, s22 = 0, t1 = 0, t2 = 0;
  for (const CausalForwardPoint& p : points) {
    const double x1 = p.causal_tflops, x2 = p.causal_tflops / p.seq_len;
    s11 += x1 * x1;
    s12 += x1 * x2;
    s22 += x2 * x2;
    t1 += x1;
    t2 += x2;
  }
  CausalForwardFit fit;
  const double det = s11 * s22 - s12 * s12;
  if (points.size() < 2 || det <= 0) return fit;
  const double a = (t1 * s22 - t2 * s12) / det, b = (s11 * t2 - s12 * t1) / det;
  fit.long_tflops = 1.0 / a;
  fit.tokens = b / a;
  for (const CausalForwardPoint& p : points) {
    fit.max_abs_error_pct =
        std::max(fit.max_abs_error_pct, std::abs((a + b / p.seq_len) * p.causal_tflops - 1.0) * 100.0);
  }
  return fit;
}

const PublishedCausalForward& published_causal_forward(const std::string& kernel) {
  static const std::map<std::string, PublishedCausalForward> published = {
      {"fa3", {kFa3Forward, "the FlashAttention-3 paper's Fig. 5d"}},
      {"fa2", {kFa2Forward, "the FlashAttention-3 paper's Fig. 5d"}},
      {"cudnn", {kCudnnForward, "the FlashAttention-3 paper's Fig. 5d"}},
  };
  return published.at(kernel);
}

std::string causal_forward_source(const PublishedCausalForward& published) {
  const CausalForwardFit fit = fit_causal_forward(published.points);
  return "; its causal forward " + model::format_number("%.0f", fit.long_tflops) +
         " TFLOP/s over long sequences and 1 + D / L times that time over L tokens, D " +
         model::format_number("%.0f", fit.tokens) + " (fitted on " + published.source + ": " +
         std::to_string(published.points.size()) + " lengths, " +
         model::format_number("%.0f", published.points.front().seq_len) + " to " +
         model::format_number("%.0f", published.points.back().seq_len) + " tokens, max error " +
         model::format_number("%.1f%%", fit.max_abs_error_pct) + ")";
}

}  // namespace tpsim::calibrate
