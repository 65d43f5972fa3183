// Fits the causal mask's cost in attention kernels on published rates: attention.backward_causal_tokens (a causal
// backward over L tokens takes 1 + D / L times the time its FLOPs take at the unmasked rate) and the forward's
// efficiency with forward_causal_tokens (a causal forward over L tokens runs at R / (1 + D / L)).
#pragma once

#include <span>
#include <string>

namespace tpsim::calibrate {

// One sequence length's backward rates of a kernel, in TFLOP/s (FlashAttention's count: the causal one over half
// the pairs), measured in one harness on one GPU.
struct CausalBackwardPoint {
  double seq_len = 0;
  double unmasked_tflops = 0;
  double causal_tflops = 0;
};

struct CausalTokensFit {
  double tokens = 0;             // D
  double max_abs_error_pct = 0;  // of the causal backward's time, over the points
};

// D by least squares on the time ratios (unmasked rate / causal rate = 1 + D / L).
CausalTokensFit fit_causal_tokens(std::span<const CausalBackwardPoint> points);

// The published points each shipped attention kernel's D is fitted on, and where they come from.
struct PublishedCausalBackward {
  std::span<const CausalBackwardPoint> points;
  const char* source;
};
// Of the kernel a profile names "fa3", "fa2" or "cudnn"; std::out_of_range for another.
const PublishedCausalBackward& published_causal_backward(const std::string& kernel);

// "; its causal backward D tokens more (fitted on ...: N lengths, ..., max error E%)", for a kernel's source.
std::string causal_tokens_source(const PublishedCausalBackward& published);

// One sequence length's causal forward rate of a kernel, in TFLOP/s (over half the pairs), on a causal square.
struct CausalForwardPoint {
  double seq_len = 0;
  double causal_tflops = 0;
};

struct CausalForwardFit {
  double long_tflops = 0;        // R: the rate the causal forward tends to over long sequences
  double tokens = 0;             // D
  double max_abs_error_pct = 0;  // of the causal forward's time, over the points
};

// R and D by least squares on the relative errors of the times (R / rate = 1 + D / L, linear in 1 / R and D / R).
CausalForwardFit fit_causal_forward(std::span<const CausalForwardPoint> points);

struct PublishedCausalForward {
  std::span<const CausalForwardPoint> points;
  const char* source;
};
// Of the kernel a profile names "fa3", "fa2" or "cudnn" (the FlashAttention-3 paper's Fig. 5d); std::out_of_range for
// another.
const PublishedCausalForward& published_causal_forward(const std::string& kernel);

// "; its causal forward R TFLOP/s over long sequences and 1 + D / L times that time over L tokens, D ... (fitted on
// ...: N lengths, ..., max error E%)", for a kernel's source.
std::string causal_forward_source(const PublishedCausalForward& published);

}  // namespace tpsim::calibrate
